import sql, { empty, join, type Sql } from 'sql-template-tag'
import type { Db } from '../../db/db.ts'
import { containsPattern, toDate, toIso, toIsoOrNull } from '../../db/db.ts'
import type { EnquiryDetail, EnquiryListItem, EnquiryStatus, Reply } from './model.ts'

export interface NewEnquiry {
  id: string
  name: string
  phone: string
  email: string
  message: string
  source: string
  status: EnquiryStatus
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

export type PendingNotification = Pick<NewEnquiry, 'id' | 'name' | 'phone' | 'email' | 'message' | 'source'> & {
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

/**
 * At start-up every pending notification is due at once: a lease held by a process that died
 * would otherwise keep its row waiting for the lease to run out (one `serve` per database, P40).
 */
export async function makePendingNotificationsDue(db: Db, now: Date): Promise<number> {
  const result = await db.execute(sql`
    UPDATE enquiries SET notify_after = ${now} WHERE notified_at IS NULL AND notify_after IS NOT NULL AND notify_after > ${now}`)
  return result.affectedRows
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

// ---- Admin inbox ----

const LIST_COLUMNS = sql`e.id, e.name, e.email, e.phone, e.message, e.source, e.status, e.spam_score, e.spam_reason,
  e.notified_at, e.created_at, e.updated_at,
  (SELECT COUNT(*) FROM enquiry_replies r WHERE r.enquiry_id = e.id) AS reply_count`

function toListItem(row: Record<string, unknown>): EnquiryListItem {
  return {
    id: row.id as string,
    name: row.name as string,
    email: row.email as string,
    phone: row.phone as string,
    message: row.message as string,
    source: row.source as EnquiryListItem['source'],
    status: row.status as EnquiryListItem['status'],
    spamScore: Number(row.spam_score),
    spamReason: (row.spam_reason as string | null) ?? null,
    replyCount: Number(row.reply_count),
    notifiedAt: toIsoOrNull(row.notified_at),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  }
}

export interface InboxFilter {
  status?: EnquiryStatus
  source?: string
  q?: string
  /** Inclusive lower bound on `created_at`. */
  from?: Date
  /** Upper bound on `created_at`: exclusive for a whole day given as a date, inclusive otherwise. */
  to?: { at: Date; inclusive: boolean }
  page: number
  perPage: number
  sort: 'newest' | 'oldest'
}

/** One page of the inbox, each row with its reply count from the same query, plus the total. */
export async function listEnquiries(db: Db, f: InboxFilter): Promise<{ items: EnquiryListItem[]; total: number }> {
  const conditions: Sql[] = []
  if (f.status) conditions.push(sql`e.status = ${f.status}`)
  if (f.source) conditions.push(sql`e.source = ${f.source}`)
  if (f.from) conditions.push(sql`e.created_at >= ${f.from}`)
  if (f.to) conditions.push(f.to.inclusive ? sql`e.created_at <= ${f.to.at}` : sql`e.created_at < ${f.to.at}`)
  if (f.q) {
    // LOWER on both sides: SQLite's LIKE ignores case for ASCII only, MySQL's collation for all.
    const like = containsPattern(f.q.toLowerCase())
    conditions.push(sql`(LOWER(e.name) LIKE ${like} ESCAPE '!' OR LOWER(e.email) LIKE ${like} ESCAPE '!'
      OR e.phone LIKE ${like} ESCAPE '!' OR LOWER(e.message) LIKE ${like} ESCAPE '!')`)
  }
  const where = conditions.length > 0 ? sql`WHERE ${join(conditions, ' AND ')}` : empty
  const order = f.sort === 'newest' ? sql`e.created_at DESC, e.id DESC` : sql`e.created_at ASC, e.id ASC`
  const rows = await db.query(sql`
    SELECT ${LIST_COLUMNS} FROM enquiries e ${where} ORDER BY ${order}
    LIMIT ${f.perPage} OFFSET ${(f.page - 1) * f.perPage}`)
  const count = await db.one<{ n: number }>(sql`SELECT COUNT(*) AS n FROM enquiries e ${where}`)
  return { items: rows.map(toListItem), total: Number(count?.n ?? 0) }
}

/** The enquiry with its replies (oldest first, each with its author), or undefined. */
export async function findEnquiryDetail(db: Db, id: string): Promise<EnquiryDetail | undefined> {
  const row = await db.one(sql`SELECT ${LIST_COLUMNS}, e.user_agent, e.referer, e.ip_hash FROM enquiries e WHERE e.id = ${id}`)
  if (!row) return undefined
  const replies = await db.query(sql`
    SELECT r.id, r.body, r.author_id, a.name AS author_name, r.delivery_status, r.delivery_error, r.sent_at, r.created_at
    FROM enquiry_replies r JOIN admin_users a ON a.id = r.author_id
    WHERE r.enquiry_id = ${id} ORDER BY r.created_at ASC, r.id ASC`)
  return {
    ...toListItem(row),
    userAgent: (row.user_agent as string | null) ?? null,
    referer: (row.referer as string | null) ?? null,
    ipHash: (row.ip_hash as string | null) ?? null,
    replies: replies.map(
      (r): Reply => ({
        id: r.id as string,
        body: r.body as string,
        author: { id: r.author_id as string, name: r.author_name as string },
        deliveryStatus: r.delivery_status as Reply['deliveryStatus'],
        deliveryError: (r.delivery_error as string | null) ?? null,
        sentAt: toIsoOrNull(r.sent_at),
        createdAt: toIso(r.created_at),
      }),
    ),
  }
}

/** `new` becomes `read` when an admin opens the enquiry; any other status stays. */
export async function markEnquiryRead(db: Db, id: string, now: Date): Promise<void> {
  await db.execute(sql`UPDATE enquiries SET status = 'read', updated_at = ${now} WHERE id = ${id} AND status = 'new'`)
}

export async function setEnquiryStatus(db: Db, id: string, status: EnquiryStatus, now: Date): Promise<void> {
  await db.execute(sql`UPDATE enquiries SET status = ${status}, updated_at = ${now} WHERE id = ${id}`)
}

export async function insertReply(db: Db, r: { id: string; enquiryId: string; authorId: string; body: string; now: Date }): Promise<void> {
  await db.execute(sql`
    INSERT INTO enquiry_replies (id, enquiry_id, author_id, body, delivery_status, created_at)
    VALUES (${r.id}, ${r.enquiryId}, ${r.authorId}, ${r.body}, 'pending', ${r.now})`)
}

export async function markReplySent(db: Db, id: string, now: Date): Promise<void> {
  await db.execute(sql`UPDATE enquiry_replies SET delivery_status = 'sent', delivery_error = ${null}, sent_at = ${now} WHERE id = ${id}`)
}

export async function markReplyFailed(db: Db, id: string, error: string): Promise<void> {
  await db.execute(sql`UPDATE enquiry_replies SET delivery_status = 'failed', delivery_error = ${error.slice(0, 255)} WHERE id = ${id}`)
}

/**
 * Replies still `pending` from before `before`: their process stopped between storing the reply and
 * recording the outcome, so nobody knows whether the e-mail left. They become `failed` with that said.
 */
export async function failInterruptedReplies(db: Db, before: Date): Promise<number> {
  const result = await db.execute(sql`
    UPDATE enquiry_replies SET delivery_status = 'failed',
      delivery_error = 'interrupted by a restart before the outcome was known; the e-mail may not have been sent'
    WHERE delivery_status = 'pending' AND created_at < ${before}`)
  return result.affectedRows
}
