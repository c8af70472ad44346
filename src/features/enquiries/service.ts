import { ulid } from 'ulid'
import type { Deps } from '../../deps.ts'
import { hashIp } from '../../http/client-ip.ts'
import { schemaProblems, TooManyRequests, Unprocessable } from '../../http/errors.ts'
import { log } from '../../lib/log.ts'
import { SlidingWindow } from '../../lib/sliding-window.ts'
import { Submission } from './model.ts'
import type { Outbox } from './outbox.ts'
import { insertEnquiry } from './queries.ts'

const MESSAGES: Record<string, string> = {
  name: 'Please enter your name (2 to 100 characters)',
  phone: 'Please enter a phone number (7 to 20 digits, spaces or + ( ) -)',
  email: 'Please enter a valid e-mail address',
  message: 'Please write a message of 10 to 2000 characters',
  source: 'Unknown source',
  website: 'Must be text',
  token: 'Must be text',
}

const CAPTCHA_TIMEOUT_MS = 3000

export interface Client {
  ip: string
  userAgent: string | null
  referer: string | null
}

/** Trims every string (decision 1) and checks the result against `Submission`; 422 with fields. */
export function parseSubmission(body: Record<string, unknown>): Submission {
  const text = (v: unknown) => (typeof v === 'string' ? v.trim() : v)
  const input = {
    name: text(body.name),
    phone: text(body.phone),
    email: text(body.email),
    message: typeof body.message === 'string' ? body.message.replace(/\r\n?/g, '\n').trim() : body.message,
    source: body.source === undefined ? 'contact' : text(body.source),
    website: body.website === undefined || body.website === null ? '' : text(body.website),
    token: body.token === undefined || body.token === null ? '' : text(body.token),
  }
  const fields = schemaProblems(Submission, input, (key) => MESSAGES[key] ?? 'Invalid value')
  if (Object.keys(fields).length > 0) throw new Unprocessable('Please check the highlighted fields', fields)
  return input as Submission
}

/** POST /enquiries in the spec's order: validate, honeypot, captcha, rate limit, store, notify. */
export function createEnquiryService({ config, db, clock, outbox }: Pick<Deps, 'config' | 'db' | 'clock'> & { outbox: Outbox }) {
  // Decision 2: every valid POST counts, the rejected ones too; keys are bounded.
  const perHour = new SlidingWindow(5, 60 * 60_000)
  const perDay = new SlidingWindow(20, 24 * 60 * 60_000)

  async function captchaPasses(token: string, ip: string): Promise<boolean> {
    if (!token) return false
    try {
      const res = await fetch(config.captcha.verifyUrl, {
        method: 'POST',
        body: new URLSearchParams({ secret: config.captcha.secret!, response: token, remoteip: ip }),
        signal: AbortSignal.timeout(CAPTCHA_TIMEOUT_MS),
      })
      if (!res.ok) throw new Error(`captcha provider answered ${res.status}`)
      return (await res.json() as { success?: unknown }).success === true
    } catch (error) {
      // The provider being down must not cost a real enquiry: fail open (decision 3).
      log.warn({ event: 'captcha_unavailable', error: (error as Error).message }, 'captcha check skipped')
      return true
    }
  }

  return {
    async submit(body: Record<string, unknown>, client: Client): Promise<string> {
      const input = parseSubmission(body)
      const now = clock.now()
      const ipHash = hashIp(client.ip, config.ipHashSalt)
      const t = now.getTime()
      const wait = Math.max(perHour.retryAfter(ipHash, t), perDay.retryAfter(ipHash, t))
      perHour.add(ipHash, t)
      perDay.add(ipHash, t)

      let spamReason: 'honeypot' | 'captcha' | 'rate' | null = null
      if (input.website !== '') spamReason = 'honeypot'
      else if (config.captcha.secret && !(await captchaPasses(input.token, client.ip))) spamReason = 'captcha'
      else if (wait > 0) spamReason = 'rate'

      const id = ulid()
      const notify = spamReason === null && config.mail.notifyTo.length > 0
      await insertEnquiry(db, {
        id,
        name: input.name,
        phone: input.phone,
        email: input.email,
        message: input.message,
        source: input.source,
        status: spamReason ? 'spam' : 'new',
        spamScore: spamReason === 'rate' ? 50 : spamReason ? 100 : 0,
        spamReason,
        userAgent: client.userAgent?.slice(0, 255) ?? null,
        referer: client.referer?.slice(0, 255) ?? null,
        ipHash,
        notifyAfter: notify ? now : null,
        now,
      })
      log.info({ event: 'enquiry_received', enquiryId: id, spamReason }, 'enquiry stored')
      if (spamReason === 'rate') throw new TooManyRequests('Too many enquiries from your network; please try again later', wait)
      // Stored first; the e-mail leaves afterwards and never holds up the response.
      if (notify) void outbox.kick()
      return id
    },
  }
}
