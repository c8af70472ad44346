/**
 * Sliding-window counters kept in process memory (login failures, enquiry rates): at most `limit`
 * events per key in any `windowMs`. Keys are bounded: a flood from many addresses cannot grow
 * memory without limit. Keys live in two generations of at most `maxKeys / 2` each; when the newer
 * one fills, the older is dropped whole and the newer takes its place, and a key touched in the
 * older moves to the newer. So the keys forgotten are those untouched the longest, and every
 * operation takes constant time (P54). (Dropping one key at a time from the front of a Map, the
 * first version, slowed by the flood itself: JavaScriptCore walks the deleted slots each time, from
 * 0.5 to 145 microseconds an operation after 400,000 addresses.)
 *
 * A full window holds `maxKeys` keys, so each is kept small (P54): the key as a 53-bit hash (a
 * number, so no string stays alive; two keys share a count with a chance of about 1 in 10^6 when
 * 100,000 are held), and a key's single event as a bare timestamp, an array only from the second.
 * That is ~70 bytes a key instead of ~200.
 */
export class SlidingWindow {
  private newer = new Map<number, number | number[]>()
  private older = new Map<number, number | number[]>()

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
    this.older.delete(id)
    this.newer.set(id, times.length === 1 ? now : times)
    if (this.newer.size >= this.maxKeys / 2) {
      this.older = this.newer
      this.newer = new Map()
    }
  }

  clear(key: string): void {
    const id = slot(key)
    this.newer.delete(id)
    this.older.delete(id)
  }

  get size(): number {
    return this.newer.size + this.older.size
  }

  private recent(id: number, now: number): number[] {
    const held = this.newer.get(id) ?? this.older.get(id)
    const times = held === undefined ? [] : typeof held === 'number' ? [held] : held
    return times.filter((t) => t > now - this.windowMs)
  }
}

const slot = (key: string) => Number(BigInt.asUintN(53, Bun.hash.wyhash(key)))
