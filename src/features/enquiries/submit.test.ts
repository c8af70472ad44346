import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sql from 'sql-template-tag'
import { createDb } from '../../db/index.ts'
import { fixedClock } from '../../lib/clock.ts'
import { json, startApp, type TestApp } from '../../../test/harness.ts'
import { startSmtpSink, type SmtpSink } from '../../../test/smtp.ts'

const valid = {
  name: 'Ada Lovelace',
  phone: '+44 20 7946 0000',
  email: 'ada@example.com',
  message: 'I would like to book a desk for March.',
}

const post = (app: TestApp, body: unknown, headers: Record<string, string> = {}) =>
  app.fetch('/enquiries', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

/** Each test posts from its own address (TRUST_PROXY=127.0.0.1), so rate limits do not leak between tests. */
let n = 0
const fromNewIp = () => ({ 'x-forwarded-for': `203.0.113.${++n}` })

const row = (app: Pick<TestApp, 'db'>, id: string) =>
  app.db.one<Record<string, unknown>>(sql`SELECT status, spam_reason, spam_score, source, name, message, ip_hash, user_agent, referer,
                                                notified_at, notify_attempts, notify_error FROM enquiries WHERE id = ${id}`)

let sink: SmtpSink
let app: TestApp
beforeAll(async () => {
  sink = await startSmtpSink()
  app = await startApp({ env: { ...sink.env, TRUST_PROXY: '127.0.0.1' } })
})
afterAll(async () => {
  await app.destroy()
  await sink.close()
})

describe('validation', () => {
  test('a valid enquiry is stored as new and answered 200 { ok: true, id }', async () => {
    const res = await post(app, valid, fromNewIp())
    expect(res.status).toBe(200)
    const body = await json(res)
    expect(Object.keys(body).sort()).toEqual(['id', 'ok'])
    expect(body.ok).toBe(true)
    expect(body.id).toMatch(/^[0-9A-Z]{26}$/)
    const stored = await row(app, body.id)
    expect(stored).toMatchObject({ status: 'new', spam_reason: null, source: 'contact', name: 'Ada Lovelace' })
  })

  test('each bad field is named in a 422 of exactly { ok: false, error, fields }', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ...valid, name: 'A' }, 'name'],
      [{ ...valid, name: 'x'.repeat(101) }, 'name'],
      [{ ...valid, phone: '12345' }, 'phone'],
      [{ ...valid, phone: '+44 (20) 7946-0000 ext 5' }, 'phone'],
      [{ ...valid, email: 'not-an-email' }, 'email'],
      [{ ...valid, email: `${'a'.repeat(250)}@example.com` }, 'email'],
      [{ ...valid, message: 'too short' }, 'message'],
      [{ ...valid, message: 'x'.repeat(2001) }, 'message'],
      [{ ...valid, source: 'twitter' }, 'source'],
      [{ ...valid, name: 42 }, 'name'],
      [{ phone: valid.phone, email: valid.email, message: valid.message }, 'name'],
    ]
    for (const [body, field] of cases) {
      const res = await post(app, body, fromNewIp())
      expect(res.status).toBe(422)
      const answer = await json(res)
      expect(Object.keys(answer).sort()).toEqual(['error', 'fields', 'ok'])
      expect(answer.ok).toBe(false)
      expect(Object.keys(answer.fields)).toContain(field)
    }
  })

  test('an unusual but valid e-mail address is accepted (the OpenAPI plugin must not swap the email format)', async () => {
    const res = await post(app, { ...valid, email: '!q+.~x@d.example.vn' }, fromNewIp())
    expect(res.status).toBe(200)
  })

  test('strings are trimmed before validation, so padding cannot make a short name long enough', async () => {
    const res = await post(app, { ...valid, name: '   A   ' }, fromNewIp())
    expect(res.status).toBe(422)
    const ok = await post(app, { ...valid, name: '  Ada  ' }, fromNewIp())
    expect((await row(app, (await json(ok)).id))!.name).toBe('Ada')
  })

  test('control characters are refused in name, phone and e-mail but tabs and newlines are kept in the message', async () => {
    expect((await post(app, { ...valid, name: 'Ada\u0000Lovelace' }, fromNewIp())).status).toBe(422)
    expect((await post(app, { ...valid, email: 'ada\n@example.com' }, fromNewIp())).status).toBe(422)
    expect((await post(app, { ...valid, message: 'Bell \u0007 in the middle of it' }, fromNewIp())).status).toBe(422)
    const res = await post(app, { ...valid, message: 'Line one\r\nline two\tand a tab' }, fromNewIp())
    expect(res.status).toBe(200)
    expect((await row(app, (await json(res)).id))!.message).toBe('Line one\nline two\tand a tab')
  })

  test('a body that is not a JSON object is a 422 or 400 with ok: false, never a 5xx', async () => {
    for (const body of ['[1,2]', '"text"', 'null', '{']) {
      const res = await app.fetch('/enquiries', { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      expect([400, 422]).toContain(res.status)
      expect((await json(res)).ok).toBe(false)
    }
  })
})

describe('spam', () => {
  test('a filled honeypot is stored as spam and still answered 200 with the real id, and no e-mail leaves', async () => {
    const res = await post(app, { ...valid, website: 'http://spam.example' }, fromNewIp())
    expect(res.status).toBe(200)
    const { id } = await json(res)
    expect(await row(app, id)).toMatchObject({ status: 'spam', spam_reason: 'honeypot' })
    await app.deps.outbox.kick()
    expect(sink.messages.some((m) => m.text?.includes(id))).toBe(false)
  })

  test('the sixth enquiry within an hour from one address is 429 and stored as spam/rate', async () => {
    const ip = fromNewIp()
    for (let i = 0; i < 5; i++) expect((await post(app, valid, ip)).status).toBe(200)
    const res = await post(app, valid, ip)
    expect(res.status).toBe(429)
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
    const body = await json(res)
    expect(body.ok).toBe(false)
    expect(body.error).toBeString()
    const limited = await app.db.query(sql`SELECT id FROM enquiries WHERE spam_reason = 'rate'`)
    expect(limited.length).toBeGreaterThanOrEqual(1)
    // Another address is not affected.
    expect((await post(app, valid, fromNewIp())).status).toBe(200)
  })

  test('the day limit of 20 holds across hours, with every attempt counted', async () => {
    const clock = fixedClock(new Date('2026-09-01T00:00:00.000Z'))
    const own = await startApp({ clock })
    try {
      const statuses: number[] = []
      for (let hour = 0; hour < 5; hour++) {
        for (let i = 0; i < 5; i++) statuses.push((await post(own, valid)).status)
        clock.advance(60 * 60_000 + 1000)
      }
      expect(statuses.slice(0, 20).every((s) => s === 200)).toBe(true)
      expect(statuses.slice(20)).toEqual([429, 429, 429, 429, 429])
      clock.advance(24 * 60 * 60_000)
      expect((await post(own, valid)).status).toBe(200)
    } finally {
      await own.destroy()
    }
  })
})

describe('privacy', () => {
  test('only a salted hash of the client address is stored, and user agent and referer are cut to 255', async () => {
    const ip = '198.51.100.77'
    const res = await post(app, valid, { 'x-forwarded-for': ip, 'user-agent': 'u'.repeat(400), referer: `https://site.test/${'r'.repeat(400)}` })
    const { id } = await json(res)
    const stored = (await row(app, id))!
    expect(stored.ip_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(stored.ip_hash).toBe(new Bun.CryptoHasher('sha256').update(ip).update(app.config.ipHashSalt).digest('hex'))
    expect((stored.user_agent as string).length).toBe(255)
    expect((stored.referer as string).length).toBe(255)
    const everything = JSON.stringify(await app.db.query(sql`SELECT * FROM enquiries`))
    expect(everything).not.toContain(ip)
  })
})

describe('captcha', () => {
  let verifier: ReturnType<typeof Bun.serve>
  let mode: 'pass' | 'fail' | 'down' = 'pass'
  const seen: URLSearchParams[] = []
  let own: TestApp
  beforeAll(async () => {
    verifier = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        seen.push(new URLSearchParams(await req.text()))
        if (mode === 'down') return new Response('oops', { status: 502 })
        return Response.json({ success: mode === 'pass' })
      },
    })
    own = await startApp({ env: { CAPTCHA_SECRET: 'captcha-secret', CAPTCHA_VERIFY_URL: `http://127.0.0.1:${verifier.port}/siteverify`, TRUST_PROXY: '127.0.0.1' } })
  })
  afterAll(async () => {
    await own.destroy()
    verifier.stop(true)
  })

  test('an accepted token stores the enquiry as new, and the provider gets secret, response and remoteip', async () => {
    mode = 'pass'
    const res = await post(own, { ...valid, token: 'good-token' }, { 'x-forwarded-for': '192.0.2.10' })
    expect(res.status).toBe(200)
    expect((await row(own, (await json(res)).id))!.status).toBe('new')
    const last = seen.at(-1)!
    expect(last.get('secret')).toBe('captcha-secret')
    expect(last.get('response')).toBe('good-token')
    expect(last.get('remoteip')).toBe('192.0.2.10')
  })

  test('a rejected or missing token is stored as spam/captcha and answered like a success', async () => {
    mode = 'fail'
    for (const body of [{ ...valid, token: 'bad-token' }, valid]) {
      const res = await post(own, body, fromNewIp())
      expect(res.status).toBe(200)
      expect(await row(own, (await json(res)).id)).toMatchObject({ status: 'spam', spam_reason: 'captcha' })
    }
  })

  test('an unreachable provider fails open: the enquiry is stored as new', async () => {
    mode = 'down'
    const res = await post(own, { ...valid, token: 'any' }, fromNewIp())
    expect(res.status).toBe(200)
    expect((await row(own, (await json(res)).id))!.status).toBe('new')
  })

  test('without CAPTCHA_SECRET no token is needed and the provider is never asked', async () => {
    const before = seen.length
    const res = await post(app, valid, fromNewIp())
    expect((await row(app, (await json(res)).id))!.status).toBe('new')
    expect(seen.length).toBe(before)
  })
})

describe('notification e-mail', () => {
  test('a new enquiry notifies every recipient with Reply-To the enquirer and escaped HTML, then sets notifiedAt', async () => {
    const res = await post(app, { ...valid, name: 'Eve <script>x</script>', email: 'eve@example.com' }, fromNewIp())
    const { id } = await json(res)
    const mail = await sink.waitFor((m) => m.text?.includes(id) ?? false)
    expect((mail.to as { text: string }).text).toContain('team@spaces.test')
    expect((mail.to as { text: string }).text).toContain('owner@spaces.test')
    expect(mail.replyTo?.text).toBe('eve@example.com')
    expect(mail.html).not.toContain('<script>')
    expect(mail.html).toContain('&lt;script&gt;')
    for (let i = 0; i < 50 && !(await row(app, id))!.notified_at; i++) await Bun.sleep(20)
    expect((await row(app, id))!.notified_at).not.toBeNull()
  })

  test('a CRLF in the name cannot add a header', async () => {
    const res = await post(app, { ...valid, name: 'Mallory\r\nBcc: victim@example.com' }, fromNewIp())
    expect(res.status).toBe(422)
  })

  test('a refused notification leaves notifiedAt empty, records the error, and is sent exactly once after the server recovers', async () => {
    const clock = fixedClock(new Date('2026-10-01T12:00:00.000Z'))
    const own = await startApp({ clock, env: sink.env })
    try {
      sink.setMode('reject')
      const res = await post(own, valid)
      expect(res.status).toBe(200)
      const { id } = await json(res)
      await own.deps.outbox.kick()
      let stored = (await row(own, id))!
      expect(stored.notified_at).toBeNull()
      expect(Number(stored.notify_attempts)).toBe(1)
      expect(String(stored.notify_error)).toContain('mailbox unavailable')

      sink.setMode('accept')
      await own.deps.outbox.kick() // not due yet: backoff
      expect(sink.messages.filter((m) => m.text?.includes(id))).toHaveLength(0)
      clock.advance(31_000)
      await own.deps.outbox.kick()
      await own.deps.outbox.kick()
      expect(sink.messages.filter((m) => m.text?.includes(id))).toHaveLength(1)
      stored = (await row(own, id))!
      expect(stored.notified_at).not.toBeNull()
      expect(stored.notify_error).toBeNull()
    } finally {
      sink.setMode('accept')
      await own.destroy()
    }
  })

  test('stopping during a slow send finishes that message and leaves the others due for the next start', async () => {
    const clock = fixedClock(new Date('2026-10-03T12:00:00.000Z'))
    const own = await startApp({ clock, env: sink.env })
    sink.setDelay(300)
    try {
      const ids: string[] = []
      for (let i = 0; i < 3; i++) ids.push((await json(await post(own, valid, fromNewIp()))).id)
      await Bun.sleep(100) // the first send is under way
      await own.stop()
      const sent = sink.messages.filter((m) => ids.some((id) => m.text?.includes(id)))
      expect(sent).toHaveLength(1)
      const db = createDb(own.config) // the app closed its own
      try {
        const pending = await Promise.all(ids.map(async (id) => (await row({ db }, id))!.notified_at))
        expect(pending.filter((at) => at === null)).toHaveLength(2)
      } finally {
        await db.close()
      }
    } finally {
      sink.setDelay(0)
      await own.destroy().catch(() => {})
    }
  })

  test('a notification still pending at a restart is sent exactly once by the next process', async () => {
    const clock = fixedClock(new Date('2026-10-02T12:00:00.000Z'))
    const first = await startApp({ clock, env: sink.env })
    sink.setMode('drop')
    const { id } = await json(await post(first, valid))
    await first.deps.outbox.kick()
    await first.stop()
    sink.setMode('accept')
    clock.advance(60_000)
    const second = await startApp({ clock, reuse: first })
    try {
      await second.deps.outbox.kick()
      await second.deps.outbox.kick()
      expect(sink.messages.filter((m) => m.text?.includes(id))).toHaveLength(1)
      expect((await row(second, id))!.notified_at).not.toBeNull()
    } finally {
      await second.destroy()
    }
  })
})
