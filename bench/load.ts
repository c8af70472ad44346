/**
 * Load and soak: rounds of mixed traffic against one server — gallery reads, enquiries from many
 * client addresses, admin list calls, and an upload every few seconds — then throughput, p50/p99
 * and unexpected errors per route, and the server's RSS before and after each round (goal: after
 * the last round at most 1.2x before the first, no growth trend). Each route's load comes from its
 * own child process (bench/lib/client.ts); the uploads come from this process.
 *
 *   bun run bench/load.ts [--seconds 60] [--rounds 3] [--uploads 0]      (TEST_DB=mysql for MariaDB)
 */
import { parseArgs } from 'node:util'
import { bearer, createAdmin, createEnquiry, login } from '../test/factories.ts'
import { startApp } from '../test/harness.ts'
import { photo } from '../test/images.ts'
import { loadFromChild, ms, type LoadResult } from './lib/load.ts'
import { memory, type Memory } from './lib/memory.ts'

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { seconds: { type: 'string', default: '60' }, rounds: { type: 'string', default: '3' }, uploads: { type: 'string', default: '1' } } })
const seconds = Number(values.seconds)
const rounds = Number(values.rounds)
// `--uploads 0` leaves the uploads out (to tell their share of the RSS from the rest).
const withUploads = values.uploads !== '0'

const app = await startApp({ env: { TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'warn' } })
const session = await login(app, (await createAdmin(app)).phone)
for (let n = 0; n < 200; n++) await createEnquiry(app)
const picture = await photo(3000, 2000)
const upload = async (n: number) => {
  const form = new FormData()
  form.set('file', new File([picture], 'photo.jpg'))
  form.set('page', n % 2 ? 'genesis' : 'hive')
  form.set('alt', `Load ${n}`)
  const res = await app.fetch('/admin/media', { method: 'POST', headers: bearer(session), body: form })
  await res.arrayBuffer()
  return res.status
}
// A gallery worth reading.
for (let n = 0; n < 6; n++) await upload(n)

const enquiry = JSON.stringify({ name: 'Load Test', phone: '+44 20 7946 0000', email: 'load@example.com', message: 'A message from the load test, long enough.' })

interface Round {
  routes: Record<string, LoadResult>
  uploads: { ok: number; other: number }
  before: Memory
  after: Memory
}
const results: Round[] = []
let uploadsDone = 0
for (let r = 0; r < rounds; r++) {
  const before = memory()
  let running = true
  const uploads = { ok: 0, other: 0 }
  const uploader = (async () => {
    while (running && withUploads) {
      ;(await upload(100 + uploadsDone++)) === 201 ? uploads.ok++ : uploads.other++
      await Bun.sleep(3000)
    }
  })()
  const [gallery, enquiries, adminList] = await Promise.all([
    loadFromChild({ url: `${app.url}/spaces/genesis/gallery`, seconds, connections: 20 }),
    loadFromChild({ url: `${app.url}/enquiries`, method: 'POST', body: enquiry, headers: { 'content-type': 'application/json' }, forwardedFor: 20 + r, seconds, connections: 4 }),
    loadFromChild({ url: `${app.url}/admin/enquiries?perPage=20`, headers: bearer(session), seconds, connections: 4 }),
  ])
  running = false
  await uploader
  results.push({ routes: { 'GET /spaces/genesis/gallery': gallery, 'POST /enquiries': enquiries, 'GET /admin/enquiries': adminList }, uploads, before, after: memory() })
}
await app.destroy()

console.log(`mixed load, ${rounds} rounds of ${seconds} s, database ${process.env.TEST_DB ?? 'sqlite'}`)
for (const [i, round] of results.entries()) {
  const { before, after } = round
  console.log(`round ${i + 1}: RSS ${before.rss} MB -> ${after.rss} MB (anonymous ${before.anon} -> ${after.anon}, JS heap ${before.heap} -> ${after.heap}); uploads ${round.uploads.ok} x 201, ${round.uploads.other} other`)
  for (const [route, r] of Object.entries(round.routes)) {
    console.log(`  ${route.padEnd(28)} ${String(r.rps).padStart(6)} req/s  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  unexpected ${r.errors}`)
  }
}
const first = results[0]!.before.rss
const last = results.at(-1)!.after.rss
console.log(`RSS after the last round ${last} MB vs ${first} MB before the first: ${(last / first).toFixed(2)}x (goal <= 1.2x); after each round: ${results.map((r) => r.after.rss).join(', ')} MB`)
console.log(`unexpected errors: ${results.reduce((n, r) => n + Object.values(r.routes).reduce((m, x) => m + x.errors, 0) + r.uploads.other, 0)} (goal 0)`)
