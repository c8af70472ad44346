/**
 * Sliding-window counters kept in process memory (login failures, enquiry rates): at most `limit`
 * events per key in any `windowMs`. Keys are bounded: when full, the least recently used key goes
 * first, so a flood from many addresses cannot grow memory without limit.
 */
export class SlidingWindow {
  private readonly hits = new Map<string, number[]>()

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys = 100_000,
  ) {}

  /** Seconds until `key` is under its limit again, or 0 when it is under it now. */
  retryAfter(key: string, now: number): number {
    const times = this.recent(key, now)
    if (times.length < this.limit) return 0
    return Math.ceil((times[times.length - this.limit]! + this.windowMs - now) / 1000)
  }

  add(key: string, now: number): void {
    const times = this.recent(key, now)
    times.push(now)
    this.hits.delete(key)
    this.hits.set(key, times)
    if (this.hits.size > this.maxKeys) this.hits.delete(this.hits.keys().next().value!)
  }

  clear(key: string): void {
    this.hits.delete(key)
  }

  get size(): number {
    return this.hits.size
  }

  private recent(key: string, now: number): number[] {
    return (this.hits.get(key) ?? []).filter((t) => t > now - this.windowMs)
  }
}
