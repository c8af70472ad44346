/**
 * GET /health through the whole app (plumbing, CORS, error formatter, a database ping) beside a bare
 * Bun.serve returning the same bytes: the ceiling on this machine. Loopback only, bounded in time;
 * the load comes from a child process (bench/lib/client.ts), not from the server's event loop.
 *
 *   bun run bench/health.ts [--seconds 5] [--connections 50]
 */
import { parseArgs } from 'node:util'
import { startApp } from '../test/harness.ts'
import { loadFromChild, ms } from './lib/load.ts'

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { seconds: { type: 'string', default: '5' }, connections: { type: 'string', default: '50' } } })
const seconds = Number(values.seconds)
const connections = Number(values.connections)

const load = (url: string) => loadFromChild({ url, seconds, connections })

const app = await startApp()
const body = await (await app.fetch('/health')).text()
const bare = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(body, { headers: { 'content-type': 'application/json' } }) })

const ceiling = await load(`http://127.0.0.1:${bare.port}/health`)
const service = await load(`${app.url}/health`)
bare.stop(true)
await app.destroy()

console.log(`GET /health, ${connections} connections, ${seconds} s each, database ${process.env.TEST_DB ?? 'sqlite'}`)
console.log(`  bare Bun.serve (ceiling): ${ceiling.rps} req/s  p50 ${ms(ceiling.p50)}  p99 ${ms(ceiling.p99)}  errors ${ceiling.errors}`)
console.log(`  spaces-api:               ${service.rps} req/s  p50 ${ms(service.p50)}  p99 ${ms(service.p99)}  errors ${service.errors}`)
console.log(`  ratio to ceiling: ${(service.rps / ceiling.rps).toFixed(2)}`)
