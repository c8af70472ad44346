import type { AddressInfo } from 'node:net'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'

export type SmtpMode = 'accept' | 'reject' | 'drop'

export interface SmtpSink {
  port: number
  messages: ParsedMail[]
  /** `reject`: 550 for every message; `drop`: the connection is cut; `accept`: back to normal. */
  setMode(mode: SmtpMode): void
  /** Makes the server take `ms` to answer each message (a slow relay). */
  setDelay(ms: number): void
  /** Resolves with the first message (arrived or arriving) that matches, or rejects after `timeoutMs`. */
  waitFor(match: (m: ParsedMail) => boolean, timeoutMs?: number): Promise<ParsedMail>
  env: Record<string, string>
  close(): Promise<void>
}

/** A real SMTP server in the test process; what it accepts is parsed and kept in `messages`. */
export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: ParsedMail[] = []
  let mode: SmtpMode = 'accept'
  let delayMs = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onConnect(_session, callback) {
      if (mode === 'drop') return callback(new Error('service not available'))
      callback()
    },
    onData(stream, _session, callback) {
      if (mode === 'reject') {
        stream.resume()
        stream.on('end', () => callback(Object.assign(new Error('mailbox unavailable'), { responseCode: 550 })))
        return
      }
      simpleParser(stream).then(
        async (mail) => {
          if (delayMs > 0) await Bun.sleep(delayMs)
          messages.push(mail)
          callback()
        },
        (error) => callback(error),
      )
    },
  })
  // A client killed mid-session (the kill -9 tests) resets its connection; smtp-server reports that
  // as an 'error' event, which unhandled would fail whichever test is running. It is not the sink's.
  server.on('error', () => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as AddressInfo).port
  return {
    port,
    messages,
    setMode(next) {
      mode = next
    },
    setDelay(ms) {
      delayMs = ms
    },
    async waitFor(match, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = messages.find(match)
        if (found) return found
        if (Date.now() > deadline) throw new Error(`no matching e-mail within ${timeoutMs} ms (${messages.length} received)`)
        await Bun.sleep(20)
      }
    },
    env: {
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(port),
      MAIL_FROM: 'Spaces <no-reply@spaces.test>',
      ENQUIRY_NOTIFY_TO: 'team@spaces.test,owner@spaces.test',
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
