/** The one source of "now". Tests that need time to pass replace it with `fixedClock`. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** A clock that stands still until moved: `clock.advance(ms)`. */
export function fixedClock(start = new Date('2026-01-01T00:00:00.000Z')) {
  let t = start.getTime()
  return {
    now: () => new Date(t),
    advance(ms: number) {
      t += ms
    },
    set(d: Date) {
      t = d.getTime()
    },
  }
}
