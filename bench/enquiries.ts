/**
 * POST /enquiries under load with an SMTP server that takes 2 s per message, beside the same load
 * with an instant one. The response must not wait on mail: the two p99s should differ by < 5 ms,
 * and p99 stay under 20 ms. Every request comes from its own address (TRUST_PROXY), so the rate
 * limit stores nothing as spam and every enquiry schedules a notification.
 *
 *   bun run bench/enquiries.ts [--seconds 10] [--connections 10]      (TEST_DB=mysql for MariaDB)
 */
import { parseArgs } from 'node:util'
import sql from 'sql-template-tag'
import { startApp } from '../test/harness.ts'
import { startSmtpSink } from '../test/smtp.ts'
import { closedLoop, ms, type LoadResult } from './lib/load.ts'

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '10' } } })
const seconds = Number(values.seconds)
const connections = Number(values.connections)

const body = JSON.stringify({
  name: 'Ada Lovelace',
  phone: '+44 20 7946 0000',
  email: 'ada@example.com',
  message: 'I would like to book a desk for March, for two people.',
  source: 'genesis',
})

async function run(smtpDelayMs: number): Promise<LoadResult & { notified: number; stored: number }> {
  const sink = await startSmtpSink()
  sink.setDelay(smtpDelayMs)
  const app = await startApp({ env: { ...sink.env, TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'warn' } })
  const send = async (client: number, n: number) => {
    const res = await app.fetch('/enquiries', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': `10.${client}.${(n >> 8) & 255}.${n & 255}` },
      body,
    })
    await res.arrayBuffer()
    return res.status === 200
  }
  for (let i = 0; i < 200; i++) await send(250, 60_000 + i) // warm-up
  const result = await closedLoop({ seconds, connections, send })
  const stored = Number((await app.db.one<{ n: number }>(sql`SELECT COUNT(*) AS n FROM enquiries WHERE status = 'new'`))?.n)
  const notified = Number((await app.db.one<{ n: number }>(sql`SELECT COUNT(*) AS n FROM enquiries WHERE notified_at IS NOT NULL`))?.n)
  await app.destroy()
  await sink.close()
  return { ...result, notified, stored }
}

const instant = await run(0)
const slow = await run(2000)

const line = (label: string, r: Awaited<ReturnType<typeof run>>) =>
  `  ${label} ${String(r.rps).padStart(5)} req/s  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  max ${ms(r.max)}  errors ${r.errors}  ` +
  `(stored ${r.stored}, notified during the run ${r.notified})`
console.log(`POST /enquiries, ${connections} connections, ${seconds} s each, database ${process.env.TEST_DB ?? 'sqlite'}`)
console.log(line('instant SMTP (reference):', instant))
console.log(line('SMTP taking 2 s/message: ', slow))
const diff = slow.p99 - instant.p99
console.log(`  p99 difference ${ms(diff)} (goal < 5 ms); p99 with slow SMTP ${ms(slow.p99)} (goal < 20 ms)`)
