import sql from 'sql-template-tag'
import type { Db } from '../../db/db.ts'
import { toDate } from '../../db/db.ts'

export interface NewEnquiry {
  id: string
  name: string
  phone: string
  email: string
  message: string
  source: string
  status: 'new' | 'spam'
  spamScore: number
  spamReason: string | null
  userAgent: string | null
  referer: string | null
  ipHash: string
  /** When the notification is due; null when none is to be sent (spam). */
  notifyAfter: Date | null
  now: Date
}

export async function insertEnquiry(db: Db, e: NewEnquiry): Promise<void> {
  await db.execute(sql`
    INSERT INTO enquiries (id, name, phone, email, message, source, status, spam_score, spam_reason, user_agent, referer,
                           ip_hash, notify_attempts, notify_after, created_at, updated_at)
    VALUES (${e.id}, ${e.name}, ${e.phone}, ${e.email}, ${e.message}, ${e.source}, ${e.status}, ${e.spamScore}, ${e.spamReason},
            ${e.userAgent}, ${e.referer}, ${e.ipHash}, ${0}, ${e.notifyAfter}, ${e.now}, ${e.now})`)
}

export interface PendingNotification {
  id: string
  name: string
  phone: string
  email: string
  message: string
  source: string
  attempts: number
  createdAt: Date
}

/** Enquiries whose notification is due: the outbox's work list, oldest first. */
export async function findDueNotifications(db: Db, now: Date, limit: number): Promise<PendingNotification[]> {
  const rows = await db.query(sql`
    SELECT id, name, phone, email, message, source, notify_attempts, created_at FROM enquiries
    WHERE notify_after IS NOT NULL AND notify_after <= ${now} AND notified_at IS NULL
    ORDER BY notify_after LIMIT ${limit}`)
  return rows.map((r) => ({
    id: r.id as string,
    name: r.name as string,
    phone: r.phone as string,
    email: r.email as string,
    message: r.message as string,
    source: r.source as string,
    attempts: Number(r.notify_attempts),
    createdAt: toDate(r.created_at),
  }))
}

/** Takes a due notification for `leaseUntil`; false when another sender took it first. */
export async function claimNotification(db: Db, id: string, now: Date, leaseUntil: Date): Promise<boolean> {
  const result = await db.execute(sql`
    UPDATE enquiries SET notify_after = ${leaseUntil}
    WHERE id = ${id} AND notified_at IS NULL AND notify_after IS NOT NULL AND notify_after <= ${now}`)
  return result.affectedRows === 1
}

export async function markNotified(db: Db, id: string, now: Date): Promise<void> {
  await db.execute(sql`
    UPDATE enquiries SET notified_at = ${now}, notify_after = ${null}, notify_error = ${null},
                         notify_attempts = notify_attempts + 1
    WHERE id = ${id}`)
}

export async function markNotifyFailed(db: Db, id: string, error: string, retryAt: Date): Promise<void> {
  await db.execute(sql`
    UPDATE enquiries SET notify_attempts = notify_attempts + 1, notify_error = ${error.slice(0, 255)}, notify_after = ${retryAt}
    WHERE id = ${id}`)
}
