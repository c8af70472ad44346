/** A closed-loop load generator for the benchmarks: `connections` clients, each sending back to back. */
export interface LoadResult {
  requests: number
  rps: number
  p50: number
  p99: number
  max: number
  errors: number
}

export async function closedLoop(options: {
  seconds: number
  connections: number
  /** One request; resolves true when the answer was the expected one. */
  send: (client: number, n: number) => Promise<boolean>
}): Promise<LoadResult> {
  const latencies: number[] = []
  let errors = 0
  let n = 0
  const end = performance.now() + options.seconds * 1000
  await Promise.all(
    Array.from({ length: options.connections }, async (_, client) => {
      while (performance.now() < end) {
        const t = performance.now()
        const ok = await options.send(client, n++).catch(() => false)
        latencies.push(performance.now() - t)
        if (!ok) errors++
      }
    }),
  )
  latencies.sort((a, b) => a - b)
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0
  return { requests: latencies.length, rps: Math.round(latencies.length / options.seconds), p50: at(0.5), p99: at(0.99), max: at(1), errors }
}

export const ms = (v: number) => `${v.toFixed(2)} ms`
