import type { Deps } from '../../deps.ts'
import { log } from '../../lib/log.ts'
import { notificationMail } from './mail.ts'
import { claimNotification, findDueNotifications, makePendingNotificationsDue, markNotified, markNotifyFailed, type PendingNotification } from './queries.ts'

const POLL_MS = 5_000
const LEASE_MS = 5 * 60_000
const BATCH = 20

/** 30 s, 1 min, 2 min, … capped at one hour between attempts. */
export function retryDelayMs(attempts: number): number {
  return Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 60 * 60_000)
}

/**
 * Sends enquiry notifications from the enquiry rows themselves (decision 6): a row is due while
 * `notify_after` has passed and `notified_at` is empty. Each send first claims the row for a lease
 * (one conditional update), so two senders never mail the same row at once; a failure records the
 * error and schedules a retry with backoff; a restart picks up whatever is still due.
 */
export function createOutbox({ config, db, clock, mailer }: Pick<Deps, 'config' | 'db' | 'clock' | 'mailer'>) {
  let timer: Timer | undefined
  let running: Promise<void> | undefined
  let again = false
  let stopping = false
  let starting: Promise<void> | undefined

  async function deliver(e: PendingNotification): Promise<void> {
    const now = clock.now()
    if (!(await claimNotification(db, e.id, now, new Date(now.getTime() + LEASE_MS)))) return
    try {
      await mailer.send(notificationMail(config.mail.notifyTo, e))
      await markNotified(db, e.id, clock.now())
      log.info({ event: 'enquiry_notified', enquiryId: e.id }, 'enquiry notification sent')
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      await markNotifyFailed(db, e.id, message, new Date(clock.now().getTime() + retryDelayMs(e.attempts + 1)))
      log.warn({ event: 'enquiry_notify_failed', enquiryId: e.id, attempts: e.attempts + 1, error: message }, 'enquiry notification failed; will retry')
    }
  }

  async function drain(): Promise<void> {
    do {
      again = false
      const due = await findDueNotifications(db, clock.now(), BATCH)
      for (const e of due) {
        // Stopping: the message being sent finishes, the rest stays due for the next start.
        if (stopping) return
        await deliver(e)
      }
      if (due.length === BATCH) again = true
    } while (again && !stopping)
  }

  const outbox = {
    /** Sends what is due now; resolves when this round is done. Concurrent calls share a round. */
    kick(): Promise<void> {
      if (stopping) return Promise.resolve()
      if (running) {
        again = true
        return running
      }
      running = drain()
        .catch((error) => log.error({ event: 'outbox_failed', err: error }, 'outbox round failed'))
        .finally(() => {
          running = undefined
        })
      return running
    },
    start() {
      stopping = false
      timer ??= setInterval(() => void outbox.kick(), POLL_MS)
      starting = makePendingNotificationsDue(db, clock.now())
        .catch((error) => log.error({ event: 'outbox_failed', err: error }, 'could not release notification leases'))
        .then(() => outbox.kick())
    },
    /** Stops polling; resolves once the message being sent (if any) is done. */
    async stop() {
      stopping = true
      clearInterval(timer)
      await starting
      timer = undefined
      await running
    },
  }
  return outbox
}

export type Outbox = ReturnType<typeof createOutbox>
