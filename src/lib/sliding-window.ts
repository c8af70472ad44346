/**
 * Sliding-window counters kept in process memory (login failures, enquiry rates): at most `limit`
 * events per key in any `windowMs`. Keys are bounded: when full, the least recently used key goes
 * first, so a flood from many addresses cannot grow memory without limit.
 *
 * A full window holds `maxKeys` keys, so each is kept small (P54): the key as a 53-bit hash (a
 * number, so no string stays alive; two keys share a count with a chance of about 1 in 10^6 when
 * 100,000 are held), and a key's single event as a bare timestamp, an array only from the second.
 * That is ~70 bytes a key instead of ~200.
 */
export class SlidingWindow {
  private readonly hits = new Map<number, number | number[]>()

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys = 100_000,
  ) {}

  /** Seconds until `key` is under its limit again, or 0 when it is under it now. */
  retryAfter(key: string, now: number): number {
    const times = this.recent(slot(key), now)
    if (times.length < this.limit) return 0
    return Math.ceil((times[times.length - this.limit]! + this.windowMs - now) / 1000)
  }

  add(key: string, now: number): void {
    const id = slot(key)
    const times = this.recent(id, now)
    times.push(now)
    this.hits.delete(id)
    this.hits.set(id, times.length === 1 ? now : times)
    if (this.hits.size > this.maxKeys) this.hits.delete(this.hits.keys().next().value!)
  }

  clear(key: string): void {
    this.hits.delete(slot(key))
  }

  get size(): number {
    return this.hits.size
  }

  private recent(id: number, now: number): number[] {
    const held = this.hits.get(id)
    const times = held === undefined ? [] : typeof held === 'number' ? [held] : held
    return times.filter((t) => t > now - this.windowMs)
  }
}

const slot = (key: string) => Number(BigInt.asUintN(53, Bun.hash.wyhash(key)))
