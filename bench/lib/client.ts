/**
 * The load generator as its own process, so that it does not share the server's event loop:
 * `bun run bench/lib/client.ts '<json LoadSpec>'` prints one JSON LoadResult line.
 */
import { closedLoop, type LoadSpec } from './load.ts'

const spec = JSON.parse(Bun.argv[2]!) as LoadSpec
const result = await closedLoop({
  seconds: spec.seconds,
  connections: spec.connections,
  async send(client, n) {
    const headers: Record<string, string> = { ...spec.headers }
    // A different client address per request (the server trusts X-Forwarded-For from loopback).
    if (spec.forwardedFor !== undefined) headers['x-forwarded-for'] = `${spec.forwardedFor}.${client}.${(n >> 8) & 255}.${n & 255}`
    const res = await fetch(spec.url, { method: spec.method ?? 'GET', headers, body: spec.body })
    await res.arrayBuffer()
    return res.status === (spec.status ?? 200)
  },
})
console.log(JSON.stringify(result))
