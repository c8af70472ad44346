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

export interface LoadSpec {
  url: string
  method?: string
  body?: string
  headers?: Record<string, string>
  /** The status a request must get to count as a success; 200 unless given. */
  status?: number
  /** A fresh X-Forwarded-For address per request, in this /8 network. */
  forwardedFor?: number
  seconds: number
  connections: number
}

/** Runs `closedLoop` in a child process (bench/lib/client.ts) against `spec.url`. */
export async function loadFromChild(spec: LoadSpec): Promise<LoadResult> {
  const child = Bun.spawn([process.execPath, 'run', new URL('./client.ts', import.meta.url).pathname, JSON.stringify(spec)], { stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(child.stdout).text()
  if ((await child.exited) !== 0) throw new Error('load generator failed')
  return JSON.parse(out.trim().split('\n').at(-1)!) as LoadResult
}
