import { describe, expect, test } from 'bun:test'
import { periodic } from './background.ts'

/** A promise and the function that settles it. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

describe('periodic', () => {
  test('runs at start, never twice at once, and once more when kicked during a run', async () => {
    const gates = [gate(), gate()]
    let runs = 0
    let active = 0
    let most = 0
    const worker = periodic('test_job', 60_000, async () => {
      active++
      most = Math.max(most, active)
      await gates[runs++]?.opened
      active--
    })
    worker.start()
    expect(runs).toBe(1)
    const first = worker.kick()
    const second = worker.kick()
    gates[0]!.open()
    await Bun.sleep(1)
    expect(runs).toBe(2) // the two kicks during the first run asked for one more run, not two
    gates[1]!.open()
    await Promise.all([first, second])
    expect({ runs, most }).toEqual({ runs: 2, most: 1 })
    await worker.stop()
  })

  test('a job that returns true runs again at once, until it returns false', async () => {
    let runs = 0
    const worker = periodic('test_job', 60_000, async () => ++runs < 3)
    worker.start()
    await worker.kick()
    expect(runs).toBe(3)
    await worker.stop()
  })

  test('stop waits for the run under way, which sees `stopping`; then nothing runs', async () => {
    const g = gate()
    let sawStopping: boolean | undefined
    let runs = 0
    const worker = periodic('test_job', 5, async () => {
      runs++
      await g.opened
      sawStopping = worker.stopping
    })
    worker.start()
    let stopped = false
    const stopping = worker.stop().then(() => (stopped = true))
    await Bun.sleep(20)
    expect(stopped).toBe(false)
    g.open()
    await stopping
    expect(sawStopping).toBe(true)
    await worker.kick()
    await Bun.sleep(20)
    expect(runs).toBe(1)
  })

  test('a failed run is logged and the next one goes ahead', async () => {
    let runs = 0
    const worker = periodic('test_job', 60_000, async () => {
      if (++runs === 1) throw new Error('boom')
    })
    worker.start()
    await worker.kick()
    await worker.kick()
    expect(runs).toBe(2)
    await worker.stop()
  })
})
