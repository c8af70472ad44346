import { ulid } from 'ulid'
import type { Deps } from '../../deps.ts'
import { BadRequest, type Fields } from '../../http/errors.ts'
import { findOr404, paging } from '../../http/schemas.ts'
import { periodic } from '../../lib/background.ts'
import { log } from '../../lib/log.ts'
import { replyMail } from './mail.ts'
import type { EnquiryDetail, EnquiryStatus, InboxQuery } from './model.ts'
import {
  failInterruptedReplies,
  findEnquiryDetail,
  insertReply,
  listEnquiries,
  markEnquiryRead,
  markReplyFailed,
  markReplySent,
  setEnquiryStatus,
  type InboxFilter,
} from './queries.ts'

// SMTP timeouts bound one send to well under this, so an older pending reply was interrupted.
const INTERRUPTED_AFTER_MS = 10 * 60_000
const RECOVER_EVERY_MS = 5 * 60_000

/**
 * A `from`/`to` bound of the schema's shape as an instant (decision 28: UTC unless a zone is
 * given; `to` as a bare date includes that whole day). Undefined when the calendar rejects it.
 */
export function parseBound(value: string, end: 'from' | 'to'): { at: Date; inclusive: boolean } | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})?)?$/.exec(value)
  if (!m) return undefined
  const [year, month, day, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map((v) => (v === undefined ? undefined : Number(v)))
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0
  const lastDay = new Date(0)
  lastDay.setUTCFullYear(year!, month!, 0)
  const daysInMonth = lastDay.getUTCDate()
  if (month! < 1 || month! > 12 || day! < 1 || day! > daysInMonth || hour > 23 || minute > 59 || second > 59) return undefined
  // Not Date.UTC(year, …): it reads the years 0-99 as 1900-1999.
  const date = new Date(0)
  date.setUTCFullYear(year!, month! - 1, day!)
  date.setUTCHours(hour, minute, second, ms)
  let at = date.getTime()
  const zone = m[8]
  if (zone && zone !== 'Z') {
    const [h, mm] = zone.slice(1).split(':').map(Number)
    if (h! > 23 || mm! > 59) return undefined
    at -= (zone[0] === '-' ? -1 : 1) * (h! * 60 + mm!) * 60_000
  }
  const dateOnly = m[4] === undefined
  if (dateOnly && end === 'to') return { at: new Date(at + 24 * 60 * 60_000), inclusive: false }
  return { at: new Date(at), inclusive: true }
}

/** The admin side of enquiries: list, read, reply, set status. */
export function createInbox({ config, db, clock, mailer }: Pick<Deps, 'config' | 'db' | 'clock' | 'mailer'>) {
  const detail = (id: string): Promise<EnquiryDetail> => findOr404(id, (key) => findEnquiryDetail(db, key), 'No such enquiry')

  const inbox = {
    async list(query: InboxQuery) {
      const fields: Fields = {}
      const from = query.from === undefined ? undefined : parseBound(query.from, 'from')
      const to = query.to === undefined ? undefined : parseBound(query.to, 'to')
      if (query.from !== undefined && !from) fields.from = 'is not a real date or time'
      if (query.to !== undefined && !to) fields.to = 'is not a real date or time'
      if (from && to && (to.inclusive ? to.at < from.at : to.at <= from.at)) fields.to = 'must not be before from'
      if (Object.keys(fields).length > 0) throw new BadRequest('Invalid date range', fields)
      const { page, perPage } = paging(query)
      const filter: InboxFilter = {
        status: query.status,
        source: query.source,
        q: query.q?.trim() || undefined,
        from: from?.at,
        to,
        page,
        perPage,
        sort: query.sort ?? 'newest',
      }
      const { items, total } = await listEnquiries(db, filter)
      return { data: items, meta: { page, perPage, total } }
    },

    /** The detail an admin opens; a `new` enquiry becomes `read`. */
    async open(id: string): Promise<EnquiryDetail> {
      const enquiry = await detail(id)
      if (enquiry.status !== 'new') return enquiry
      await markEnquiryRead(db, id, clock.now())
      return detail(id)
    },

    async setStatus(id: string, status: Exclude<EnquiryStatus, 'new'>, by: string): Promise<EnquiryDetail> {
      await detail(id)
      await setEnquiryStatus(db, id, status, clock.now())
      log.info({ event: 'enquiry_status_set', enquiryId: id, status, by }, 'enquiry status changed')
      return detail(id)
    },

    /**
     * Stores the reply and marks the enquiry `replied` (one transaction), sends the e-mail, then
     * records the outcome on the reply. A refused or failed delivery is an outcome, not an error.
     */
    async reply(id: string, author: { id: string }, text: string): Promise<EnquiryDetail> {
      const enquiry = await detail(id)
      const body = text.replace(/\r\n?/g, '\n').trim()
      const replyId = ulid()
      const now = clock.now()
      await db.transaction(async (tx) => {
        await insertReply(tx, { id: replyId, enquiryId: id, authorId: author.id, body, now })
        await setEnquiryStatus(tx, id, 'replied', now)
      })
      let failure: string | undefined
      try {
        await mailer.send(replyMail(enquiry, body, config.mail.notifyTo))
      } catch (error) {
        failure = error instanceof Error ? error.message : String(error)
      }
      if (failure === undefined) {
        await markReplySent(db, replyId, clock.now())
        log.info({ event: 'enquiry_reply_sent', enquiryId: id, replyId, by: author.id }, 'enquiry reply sent')
      } else {
        await markReplyFailed(db, replyId, failure)
        log.warn({ event: 'enquiry_reply_failed', enquiryId: id, replyId, by: author.id, error: failure }, 'enquiry reply not delivered')
      }
      return detail(id)
    },

    /** Replies left `pending` by a process that stopped mid-send become `failed`, saying so. */
    async recover(): Promise<void> {
      const n = await failInterruptedReplies(db, new Date(clock.now().getTime() - INTERRUPTED_AFTER_MS))
      if (n > 0) log.warn({ event: 'enquiry_replies_interrupted', count: n }, 'replies interrupted by a restart marked failed')
    },

    /** Runs `recover` now and every few minutes while the app listens. */
    start: () => recovery.start(),
    /** Stops the rounds; resolves once a round under way is done. */
    stop: () => recovery.stop(),
  }
  const recovery = periodic('reply_recovery', RECOVER_EVERY_MS, () => inbox.recover())
  return inbox
}

export type Inbox = ReturnType<typeof createInbox>
