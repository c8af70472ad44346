/**
 * GET /health through the whole app (plumbing, CORS, error formatter, a database ping) beside a bare
 * Bun.serve returning the same bytes: the ceiling on this machine. Loopback only, bounded in time.
 *
 *   bun run bench/health.ts [--seconds 5] [--connections 50]
 */
import { parseArgs } from 'node:util'
import { startApp } from '../test/harness.ts'

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { seconds: { type: 'string', default: '5' }, connections: { type: 'string', default: '50' } } })
const seconds = Number(values.seconds)
const connections = Number(values.connections)

async function load(url: string) {
  const latencies: number[] = []
  let errors = 0
  const end = performance.now() + seconds * 1000
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const t = performance.now()
        const res = await fetch(url).catch(() => undefined)
        if (!res || res.status !== 200) errors++
        await res?.arrayBuffer()
        latencies.push(performance.now() - t)
      }
    }),
  )
  latencies.sort((a, b) => a - b)
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!.toFixed(2)
  return { rps: Math.round(latencies.length / seconds), p50: at(0.5), p99: at(0.99), errors }
}

const app = await startApp()
const body = await (await app.fetch('/health')).text()
const bare = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(body, { headers: { 'content-type': 'application/json' } }) })

const ceiling = await load(`http://127.0.0.1:${bare.port}/health`)
const service = await load(`${app.url}/health`)
bare.stop(true)
await app.destroy()

console.log(`GET /health, ${connections} connections, ${seconds} s each, database ${process.env.TEST_DB ?? 'sqlite'}`)
console.log(`  bare Bun.serve (ceiling): ${ceiling.rps} req/s  p50 ${ceiling.p50} ms  p99 ${ceiling.p99} ms  errors ${ceiling.errors}`)
console.log(`  spaces-api:               ${service.rps} req/s  p50 ${service.p50} ms  p99 ${service.p99} ms  errors ${service.errors}`)
console.log(`  ratio to ceiling: ${(service.rps / ceiling.rps).toFixed(2)}`)
