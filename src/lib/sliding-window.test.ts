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

  test('holds at most maxKeys keys, dropping the least recently used', () => {
    const w = new SlidingWindow(1, MINUTE, 3)
    for (const key of ['a', 'b', 'c']) w.add(key, 0)
    w.add('a', 1) // a is now the most recent
    w.add('d', 2) // b goes
    expect(w.size).toBe(3)
    expect(w.retryAfter('b', 3)).toBe(0)
    expect(w.retryAfter('a', 3)).toBe(60)
    expect(w.retryAfter('c', 3)).toBe(60)
    expect(w.retryAfter('d', 3)).toBe(60)
  })

  test('a full window of 100,000 single-event keys stays under 10 MB of heap', () => {
    const heap = () => {
      Bun.gc(true)
      return heapStats().heapSize
    }
    const before = heap()
    const w = new SlidingWindow(5, 60 * MINUTE)
    for (let n = 0; n < 100_000; n++) w.add(new Bun.CryptoHasher('sha256').update(`10.0.${n}`).digest('hex'), n)
    const grown = heap() - before
    expect(w.size).toBe(100_000)
    expect(grown).toBeLessThan(10 * 2 ** 20)
  })
})
