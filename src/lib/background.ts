/** Work that runs beside the HTTP server while it listens: the mail outbox, reply recovery. */
export interface Worker {
  start(): void
  /** Resolves once the worker's current unit of work is done; it starts nothing new. */
  stop(): Promise<void> | void
}

/**
 * The app's background workers, started and stopped together. Elysia's `onStop` does not await its
 * hooks, so whoever stops the server awaits `stop()` here before closing the database.
 */
export function createBackground() {
  const workers: Worker[] = []
  let started = false
  return {
    add(worker: Worker) {
      workers.push(worker)
      if (started) worker.start()
    },
    start() {
      if (started) return
      started = true
      for (const worker of workers) worker.start()
    },
    async stop() {
      started = false
      await Promise.all(workers.map((worker) => worker.stop()))
    },
  }
}

export type Background = ReturnType<typeof createBackground>
