/**
 * The enquiry and login rate windows (src/lib/sliding-window.ts) under a flood from ever-new
 * addresses: microseconds per check-and-add, per 50,000 new addresses, up to `--keys` (default
 * 400,000), past the 100,000-key bound. Reference: the first 50,000, before any key is dropped;
 * goal: the same cost once keys are being dropped (no slowdown with the flood's size).
 *
 *   bun run bench/rate-window.ts [--keys 400000]
 */
import { parseArgs } from 'node:util'
import { SlidingWindow } from '../src/lib/sliding-window.ts'

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { keys: { type: 'string', default: '400000' } } })
const total = Number(values.keys)
const STEP = 50_000
const window = new SlidingWindow(5, 60 * 60_000)
const costs: number[] = []
for (let n = 0; n < total; ) {
  const started = performance.now()
  for (let i = 0; i < STEP; i++, n++) {
    const key = `198.51.${n >> 8}.${n & 255}`
    window.retryAfter(key, n)
    window.add(key, n)
  }
  costs.push(((performance.now() - started) * 1000) / STEP)
  console.log(`${String(n).padStart(8)} addresses, ${String(window.size).padStart(6)} held: ${costs.at(-1)!.toFixed(2)} us per check-and-add`)
}
const reference = costs[0]!
const worst = Math.max(...costs.slice(2))
console.log(`worst once dropping keys ${worst.toFixed(2)} us vs ${reference.toFixed(2)} us for the first ${STEP}: ${(worst / reference).toFixed(2)}x (goal: about 1x, no growth)`)
