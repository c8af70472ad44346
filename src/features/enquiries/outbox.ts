import type { Deps } from '../../deps.ts'
import { periodic } from '../../lib/background.ts'
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
  // Leases left by a process that stopped mid-send are released at each start, before the first round.
  let leasesReleased = false

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

  /** One batch of what is due; true when there may be more. */
  async function drain(): Promise<boolean> {
    if (!leasesReleased) {
      await makePendingNotificationsDue(db, clock.now())
      leasesReleased = true
    }
    const due = await findDueNotifications(db, clock.now(), BATCH)
    for (const e of due) {
      // Stopping: the message being sent finishes, the rest stays due for the next start.
      if (rounds.stopping) return false
      await deliver(e)
    }
    return due.length === BATCH
  }

  const rounds = periodic('outbox', POLL_MS, drain)
  return {
    /** Sends what is due now; resolves when this round is done. Concurrent calls share a round. */
    kick: rounds.kick,
    start() {
      leasesReleased = false
      rounds.start()
    },
    /** Stops polling; resolves once the message being sent (if any) is done. */
    stop: rounds.stop,
  }
}

export type Outbox = ReturnType<typeof createOutbox>
