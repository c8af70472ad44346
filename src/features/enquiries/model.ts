import { t } from 'elysia'
import { oneOf, Paging } from '../../http/schemas.ts'

export const SOURCES: ['contact', 'genesis', 'hive', 'home'] = ['contact', 'genesis', 'hive', 'home']
export const STATUSES: ['new', 'read', 'replied', 'spam', 'archived'] = ['new', 'read', 'replied', 'spam', 'archived']

// No C0 control characters (decision 1); the message may keep tabs and newlines.
const NO_CONTROL = '^[^\\u0000-\\u001F\\u007F]*$'
const MESSAGE_CONTROL = '^[^\\u0000-\\u0008\\u000B-\\u001F\\u007F]*$'

/** The submission after trimming: what must hold before anything is stored. */
export const Submission = t.Object({
  name: t.String({ minLength: 2, maxLength: 100, pattern: NO_CONTROL, error: 'must be 2 to 100 characters' }),
  phone: t.String({ minLength: 7, maxLength: 20, pattern: '^[0-9 +()\\-]*$', error: 'must be 7 to 20 digits, spaces or + ( ) -' }),
  email: t.String({ maxLength: 254, format: 'email', pattern: NO_CONTROL, error: 'must be a valid e-mail address' }),
  message: t.String({ minLength: 10, maxLength: 2000, pattern: MESSAGE_CONTROL, error: 'must be 10 to 2000 characters' }),
  source: oneOf(SOURCES, { error: `must be one of ${SOURCES.join(', ')}` }),
  website: t.String({ maxLength: 2000, error: 'must be text' }),
  token: t.String({ maxLength: 4096, error: 'must be text' }),
})
export type Submission = typeof Submission.static

/** What arrives: any JSON object; each field is checked after trimming, against `Submission`. */
export const SubmissionBody = t.Record(t.String(), t.Unknown())

export const Accepted = t.Object({ ok: t.Literal(true), id: t.String() })

// ---- Admin inbox ----

const Source = oneOf(SOURCES)
const Status = oneOf(STATUSES)
export type EnquiryStatus = (typeof STATUSES)[number]

export const EnquiryListItem = t.Object({
  id: t.String(),
  name: t.String(),
  email: t.String(),
  phone: t.String(),
  message: t.String(),
  source: Source,
  status: Status,
  spamScore: t.Integer({ minimum: 0 }),
  spamReason: t.Nullable(t.String()),
  replyCount: t.Integer({ minimum: 0 }),
  notifiedAt: t.Nullable(t.String()),
  createdAt: t.String(),
  updatedAt: t.String(),
}, { title: 'EnquiryListItem' })
export type EnquiryListItem = typeof EnquiryListItem.static

export const Reply = t.Object({
  id: t.String(),
  body: t.String(),
  author: t.Object({ id: t.String(), name: t.String() }),
  deliveryStatus: t.Union([t.Literal('pending'), t.Literal('sent'), t.Literal('failed')]),
  deliveryError: t.Nullable(t.String()),
  sentAt: t.Nullable(t.String()),
  createdAt: t.String(),
}, { title: 'Reply' })
export type Reply = typeof Reply.static

export const EnquiryDetail = t.Object({
  ...EnquiryListItem.properties,
  userAgent: t.Nullable(t.String()),
  referer: t.Nullable(t.String()),
  ipHash: t.Nullable(t.String()),
  replies: t.Array(Reply),
}, { title: 'EnquiryDetail' })
export type EnquiryDetail = typeof EnquiryDetail.static

// `YYYY-MM-DD`, or an ISO datetime; without a zone it is UTC (decision 28). The calendar is checked
// by the route (2026-02-30 has the right shape but is no date).
const Bound = t.String({
  maxLength: 35,
  pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})?)?$',
  error: 'must be a date (YYYY-MM-DD) or an ISO datetime',
})

export const InboxQuery = t.Object({
  status: t.Optional(Status),
  source: t.Optional(Source),
  q: t.Optional(t.String({ maxLength: 200 })),
  from: t.Optional(Bound),
  to: t.Optional(Bound),
  ...Paging,
  sort: t.Optional(t.Union([t.Literal('newest'), t.Literal('oldest')])),
})
export type InboxQuery = typeof InboxQuery.static

// `new` is not settable: an enquiry cannot be made unread again (the spec's 400).
export const StatusBody = t.Object({
  status: oneOf(['read', 'replied', 'spam', 'archived'], { error: 'must be one of read, replied, spam, archived' }),
})

// The pattern refuses a reply of only whitespace, which would send an empty e-mail.
export const ReplyBody = t.Object({ body: t.String({ minLength: 1, maxLength: 5000, pattern: '\\S', error: 'must be 1 to 5000 characters' }) })
