import { describe, expect, test } from 'bun:test'
import { heapStats } from 'bun:jsc'
import { SlidingWindow } from './sliding-window.ts'

const MINUTE = 60_000

describe('SlidingWindow', () => {
  test('allows `limit` events per key in any window, then says how long to wait', () => {
    const w = new SlidingWindow(3, 10 * MINUTE)
    for (const t of [0, MINUTE, 2 * MINUTE]) {
      expect(w.retryAfter('a', t)).toBe(0)
      w.add('a', t)
    }
    // The oldest of the three leaves the window at 10 minutes.
    expect(w.retryAfter('a', 3 * MINUTE)).toBe(7 * 60)
    expect(w.retryAfter('b', 3 * MINUTE)).toBe(0)
    expect(w.retryAfter('a', 10 * MINUTE - 1)).toBe(1)
    expect(w.retryAfter('a', 10 * MINUTE)).toBe(0)
    w.add('a', 10 * MINUTE)
    expect(w.retryAfter('a', 10 * MINUTE)).toBe(60)
  })

  test('a key with one event and a key with many are both counted', () => {
    const w = new SlidingWindow(1, MINUTE)
    w.add('one', 0)
    expect(w.retryAfter('one', 1000)).toBe(59)
    const many = new SlidingWindow(2, MINUTE)
    many.add('k', 0)
    many.add('k', 1000)
    many.add('k', 2000)
    expect(many.retryAfter('k', 2000)).toBe(59)
    expect(many.retryAfter('k', MINUTE + 500)).toBe(1)
  })

  test('clear forgets a key', () => {
    const w = new SlidingWindow(1, MINUTE)
    w.add('a', 0)
    w.clear('a')
    expect(w.retryAfter('a', 0)).toBe(0)
    expect(w.size).toBe(0)
  })

  test('holds at most maxKeys keys, forgetting the ones untouched the longest', () => {
    const w = new SlidingWindow(1, MINUTE, 4)
    w.add('a', 0)
    w.add('b', 0)
    w.add('c', 1)
    w.add('a', 2) // touched again: a stays
    w.add('d', 3) // b, untouched since the start, goes
    expect(w.size).toBeLessThanOrEqual(4)
    expect(w.retryAfter('b', 4)).toBe(0)
    for (const key of ['a', 'c', 'd']) expect(w.retryAfter(key, 4)).toBeGreaterThan(0)
    for (let n = 0; n < 1000; n++) {
      w.add(`flood ${n}`, 5)
      expect(w.size).toBeLessThanOrEqual(4)
    }
  })

  test('a full window (99,999 single-event keys, one short of dropping a generation) stays under 10 MB of heap', () => {
    const heap = () => {
      Bun.gc(true)
      return heapStats().heapSize
    }
    const before = heap()
    const w = new SlidingWindow(5, 60 * MINUTE)
    for (let n = 0; n < 99_999; n++) w.add(new Bun.CryptoHasher('sha256').update(`10.0.${n}`).digest('hex'), n)
    const grown = heap() - before
    expect(w.size).toBe(99_999)
    expect(grown).toBeLessThan(10 * 2 ** 20)
  })
})
