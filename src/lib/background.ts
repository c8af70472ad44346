import { log } from './log.ts'

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

/**
 * A job run at `start()`, every `everyMs` after, and on `kick()`, never two runs at once: a kick
 * during a run asks for one more when it ends, as does a job that returns `true` (more to do).
 * `stop()` ends the polling and resolves once a run under way is done; the job can read `stopping`
 * to end early. A failed run is logged as `<name>_failed` and the next one goes ahead.
 */
export function periodic(name: string, everyMs: number, job: () => Promise<boolean | void>) {
  let timer: Timer | undefined
  let running: Promise<void> | undefined
  let again = false
  let stopping = true

  const worker = {
    get stopping() {
      return stopping
    },
    /** Runs the job now, or once more after the run under way; resolves when that run is done. */
    kick(): Promise<void> {
      if (stopping) return Promise.resolve()
      if (running) {
        again = true
        return running
      }
      running = (async () => {
        do {
          again = false
          if ((await job()) === true) again = true
        } while (again && !stopping)
      })()
        .catch((error) => log.error({ event: `${name}_failed`, err: error }, `${name} failed`))
        .finally(() => {
          running = undefined
        })
      return running
    },
    start() {
      stopping = false
      timer ??= setInterval(() => void worker.kick(), everyMs)
      void worker.kick()
    },
    async stop() {
      stopping = true
      clearInterval(timer)
      timer = undefined
      await running
    },
  }
  return worker
}
