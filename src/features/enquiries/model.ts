import { t } from 'elysia'

export const SOURCES = ['contact', 'genesis', 'hive', 'home'] as const
export const STATUSES = ['new', 'read', 'replied', 'spam', 'archived'] as const

// No C0 control characters (decision 1); the message may keep tabs and newlines.
const NO_CONTROL = '^[^\\u0000-\\u001F\\u007F]*$'
const MESSAGE_CONTROL = '^[^\\u0000-\\u0008\\u000B-\\u001F\\u007F]*$'

/** The submission after trimming: what must hold before anything is stored. */
export const Submission = t.Object({
  name: t.String({ minLength: 2, maxLength: 100, pattern: NO_CONTROL, error: 'must be 2 to 100 characters' }),
  phone: t.String({ minLength: 7, maxLength: 20, pattern: '^[0-9 +()\\-]*$', error: 'must be 7 to 20 digits, spaces or + ( ) -' }),
  email: t.String({ maxLength: 254, format: 'email', pattern: NO_CONTROL, error: 'must be a valid e-mail address' }),
  message: t.String({ minLength: 10, maxLength: 2000, pattern: MESSAGE_CONTROL, error: 'must be 10 to 2000 characters' }),
  source: t.Union(SOURCES.map((s) => t.Literal(s)), { error: `must be one of ${SOURCES.join(', ')}` }),
  website: t.String({ maxLength: 2000, error: 'must be text' }),
  token: t.String({ maxLength: 4096, error: 'must be text' }),
})
export type Submission = typeof Submission.static

/** What arrives: any JSON object; each field is checked after trimming, against `Submission`. */
export const SubmissionBody = t.Record(t.String(), t.Unknown())

export const Accepted = t.Object({ ok: t.Literal(true), id: t.String() })
