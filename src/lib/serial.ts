/**
 * Runs the tasks given to it one at a time, in arrival order (decision 14: one upload at a time per
 * process). A failed task does not stop the ones behind it.
 */
export function serialQueue() {
  let tail: Promise<unknown> = Promise.resolve()
  let waiting = 0
  return {
    run<T>(task: () => Promise<T>): Promise<T> {
      waiting++
      const result = tail.then(() => {
        waiting--
        return task()
      })
      tail = result.catch(() => {})
      return result
    },
    /** Tasks queued and not yet started. */
    get waiting() {
      return waiting
    },
    /** Resolves once everything queued so far has finished. */
    idle(): Promise<void> {
      return tail.then(() => {})
    },
  }
}
