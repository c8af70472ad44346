/**
 * The test SMTP sink as its own process, so that receiving mail does not cost the server's event
 * loop: `bun run bench/lib/smtp-child.ts <delayMs>` prints its port, then counts messages on stdin EOF.
 */
import { startSmtpSink } from '../../test/smtp.ts'

const sink = await startSmtpSink()
sink.setDelay(Number(Bun.argv[2] ?? 0))
console.log(sink.port)
for await (const _ of Bun.stdin.stream()) {
  // runs until the parent closes stdin
}
console.log(sink.messages.length)
await sink.close()
process.exit(0)
