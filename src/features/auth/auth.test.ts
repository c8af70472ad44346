import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Writable } from 'node:stream'
import { SignJWT } from 'jose'
import sql from 'sql-template-tag'
import { fixedClock } from '../../lib/clock.ts'
import { configureLog } from '../../lib/log.ts'
import { bearer, createAdmin, login, PASSWORD, send } from '../../../test/factories.ts'
import { json, startApp, type TestApp } from '../../../test/harness.ts'
import { startSmtpSink, type SmtpSink } from '../../../test/smtp.ts'
import { LOGIN_FAILED, LOGIN_THROTTLED } from './service.ts'

const NEW_PASSWORD = 'a brand new passphrase for the portal'
const me = (app: TestApp, session: { accessToken: string }) => app.fetch('/admin/auth/me', { headers: bearer(session) })
const refresh = (app: TestApp, cookie: string, headers: Record<string, string> = {}) =>
  app.fetch('/admin/auth/refresh', { method: 'POST', headers: { cookie, ...headers } })
const cookieOf = (res: Response) => /svc_admin_refresh=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')?.[1]
const resetLink = (text: string) => /reset-password\?token=([A-Za-z0-9_-]+)/.exec(text)?.[1]

let sink: SmtpSink
let app: TestApp

beforeAll(async () => {
  sink = await startSmtpSink()
  app = await startApp({ env: sink.env })
})
afterAll(async () => {
  await app.destroy()
  await sink.close()
})

describe('login', () => {
  test('valid credentials give an access token, the admin and the refresh cookie with exact attributes', async () => {
    const user = await createAdmin(app)
    const res = await send(app, 'POST', '/admin/auth/login', { phone: user.phone, password: PASSWORD })
    expect(res.status).toBe(200)
    const body = await json(res)
    expect(Object.keys(body).sort()).toEqual(['accessToken', 'admin'])
    expect(body.admin).toEqual({ id: user.id, name: user.name, phone: user.phone, email: user.email, role: 'admin', status: 'active' })
    const cookie = res.headers.get('set-cookie')!
    expect(cookie).toMatch(/^svc_admin_refresh=[A-Za-z0-9_-]{43}; /)
    for (const attribute of ['Max-Age=2592000', 'Path=/admin/auth', 'HttpOnly', 'Secure', 'SameSite=None', 'Partitioned']) {
      expect(cookie.split('; ')).toContain(attribute)
    }
    expect(res.headers.get('cache-control')).toBe('no-store')
  })

  test('the phone is normalised before lookup, so a spaced form logs in', async () => {
    const user = await createAdmin(app)
    const spaced = `${user.phone.slice(0, 3)} ${user.phone.slice(3, 5)} ${user.phone.slice(5, 9)} ${user.phone.slice(9)}`
    expect((await send(app, 'POST', '/admin/auth/login', { phone: spaced, password: PASSWORD })).status).toBe(200)
  })

  test('unknown phone, wrong password, inactive user and user without password all get the same 401', async () => {
    const active = await createAdmin(app)
    const inactive = await createAdmin(app, { status: 'inactive' })
    const invited = await createAdmin(app, { password: null })
    const attempts = [
      { phone: '+442079469999', password: PASSWORD },
      { phone: active.phone, password: 'not the right password at all' },
      { phone: inactive.phone, password: PASSWORD },
      { phone: invited.phone, password: PASSWORD },
      { phone: 'not a phone', password: PASSWORD },
    ]
    for (const attempt of attempts) {
      const res = await send(app, 'POST', '/admin/auth/login', attempt)
      expect(res.status).toBe(401)
      const body = await json(res)
      expect(body.error).toBe(LOGIN_FAILED)
      expect(Object.keys(body).sort()).toEqual(['error', 'requestId'])
      expect(res.headers.get('set-cookie')).toBeNull()
    }
  })

  test('bad bodies are 400 with fields, never 5xx', async () => {
    const cases: [unknown, string][] = [
      [{ password: PASSWORD }, 'phone'],
      [{ phone: '+442079460000' }, 'password'],
      [{ phone: 12345, password: PASSWORD }, 'phone'],
      [{ phone: '+442079460000', password: 'x'.repeat(1025) }, 'password'],
    ]
    for (const [body, field] of cases) {
      const res = await send(app, 'POST', '/admin/auth/login', body)
      expect(res.status).toBe(400)
      expect((await json(res)).fields).toHaveProperty(field)
    }
    const notJson = await app.fetch('/admin/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"phone":' })
    expect(notJson.status).toBe(400)
  })
})

describe('lockout and throttling', () => {
  test('ten failures lock the account for 15 minutes, the right password included, and it survives a restart', async () => {
    const clock = fixedClock(new Date('2026-05-01T10:00:00.000Z'))
    const first = await startApp({ clock })
    const user = await createAdmin(first)
    for (let i = 0; i < 10; i++) {
      const res = await send(first, 'POST', '/admin/auth/login', { phone: user.phone, password: `wrong password number ${i}` })
      expect(res.status).toBe(401)
    }
    const locked = await send(first, 'POST', '/admin/auth/login', { phone: user.phone, password: PASSWORD })
    expect(locked.status).toBe(429)
    expect((await json(locked)).error).toBe(LOGIN_THROTTLED)
    expect(Number(locked.headers.get('retry-after'))).toBe(900)
    await first.stop()

    const second = await startApp({ clock, reuse: first })
    try {
      expect((await send(second, 'POST', '/admin/auth/login', { phone: user.phone, password: PASSWORD })).status).toBe(429)
      clock.advance(15 * 60_000 + 1000)
      expect((await send(second, 'POST', '/admin/auth/login', { phone: user.phone, password: PASSWORD })).status).toBe(200)
    } finally {
      await second.destroy()
    }
  })

  test('an unknown phone is throttled exactly like a locked one', async () => {
    const phone = '+442079469876'
    for (let i = 0; i < 10; i++) {
      expect((await send(app, 'POST', '/admin/auth/login', { phone, password: 'whatever it may be' })).status).toBe(401)
    }
    const res = await send(app, 'POST', '/admin/auth/login', { phone, password: 'whatever it may be' })
    expect(res.status).toBe(429)
    expect((await json(res)).error).toBe(LOGIN_THROTTLED)
    expect(res.headers.get('retry-after')).toBeString()
  })

  test('an IP with 30 failed logins in 15 minutes is refused before any password check', async () => {
    const own = await startApp()
    try {
      const user = await createAdmin(own)
      for (let i = 0; i < 30; i++) {
        const res = await send(own, 'POST', '/admin/auth/login', { phone: `+4420794${70000 + i}`, password: 'wrong password again' })
        expect(res.status).toBe(401)
      }
      const res = await send(own, 'POST', '/admin/auth/login', { phone: user.phone, password: PASSWORD })
      expect(res.status).toBe(429)
      expect(res.headers.get('retry-after')).toBeString()
    } finally {
      await own.destroy()
    }
  }, 60_000)

  test('a successful login resets the failure count', async () => {
    const user = await createAdmin(app)
    for (let i = 0; i < 9; i++) await send(app, 'POST', '/admin/auth/login', { phone: user.phone, password: 'wrong wrong wrong' })
    await login(app, user.phone)
    const row = await app.db.one<{ n: number }>(sql`SELECT failed_login_count AS n FROM admin_users WHERE id = ${user.id}`)
    expect(Number(row!.n)).toBe(0)
  })
})

describe('access tokens', () => {
  test('GET /admin/auth/me returns the signed-in admin', async () => {
    const user = await createAdmin(app, { role: 'superadmin' })
    const res = await me(app, await login(app, user.phone))
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({ admin: { id: user.id, name: user.name, phone: user.phone, email: user.email, role: 'superadmin', status: 'active' } })
  })

  test('a missing, garbage, truncated or foreign-signed token is 401', async () => {
    const user = await createAdmin(app)
    const session = await login(app, user.phone)
    const [header, payload] = session.accessToken.split('.')
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString())
    const sign = (secret: string, build: (j: SignJWT) => SignJWT = (j) => j) =>
      build(new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })).sign(new TextEncoder().encode(secret))
    const noneToken = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${payload}.`
    const { exp: _exp, ...withoutExp } = claims
    const tokens = [
      'garbage',
      session.accessToken.slice(0, -5),
      `${header}.${payload}`,
      noneToken,
      await sign(app.config.auth.refreshSecret),
      await sign('x'.repeat(40)),
      await new SignJWT(withoutExp).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' }).sign(new TextEncoder().encode(app.config.auth.accessSecret)),
      await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(app.config.auth.accessSecret)),
      await new SignJWT(claims).setProtectedHeader({ alg: 'HS512', typ: 'at+jwt' }).sign(new TextEncoder().encode(app.config.auth.accessSecret)),
    ]
    expect((await app.fetch('/admin/auth/me')).status).toBe(401)
    for (const token of tokens) {
      const res = await me(app, { accessToken: token })
      expect(res.status).toBe(401)
      expect((await json(res)).error).toBeString()
    }
    // The same claims signed correctly do pass, so the cases above fail for their flaw alone.
    expect((await me(app, { accessToken: await sign(app.config.auth.accessSecret) })).status).toBe(200)
  })

  test('an access token expires after ACCESS_TOKEN_TTL', async () => {
    const clock = fixedClock(new Date('2026-06-01T09:00:00.000Z'))
    const own = await startApp({ clock, env: { ACCESS_TOKEN_TTL: '5m' } })
    try {
      const user = await createAdmin(own)
      const session = await login(own, user.phone)
      clock.advance(4 * 60_000)
      expect((await me(own, session)).status).toBe(200)
      clock.advance(61_000)
      expect((await me(own, session)).status).toBe(401)
      // The portal's recovery: refresh with the cookie, then retry.
      const renewed = await refresh(own, session.cookie)
      expect(renewed.status).toBe(200)
      expect((await me(own, await json(renewed))).status).toBe(200)
    } finally {
      await own.destroy()
    }
  })
})

describe('refresh rotation', () => {
  test('a refresh rotates the cookie and returns a working access token', async () => {
    const user = await createAdmin(app)
    const session = await login(app, user.phone)
    const res = await refresh(app, session.cookie)
    expect(res.status).toBe(200)
    const next = cookieOf(res)
    expect(next).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(next).not.toBe(session.refreshToken)
    const body = await json(res)
    expect(body.admin.id).toBe(user.id)
    expect((await me(app, body)).status).toBe(200)
    expect((await refresh(app, `svc_admin_refresh=${next}`)).status).toBe(200)
  })

  test('reusing a rotated token revokes the whole family, the newest token and its access token included', async () => {
    const user = await createAdmin(app)
    const session = await login(app, user.phone)
    const rotated = await refresh(app, session.cookie)
    const newest = cookieOf(rotated)!
    const newAccess = await json(rotated)
    const reuse = await refresh(app, session.cookie)
    expect(reuse.status).toBe(401)
    expect(reuse.headers.get('set-cookie')).toContain('Max-Age=0')
    expect((await refresh(app, `svc_admin_refresh=${newest}`)).status).toBe(401)
    expect((await me(app, newAccess)).status).toBe(401)
  })

  test('two concurrent refreshes with one token: exactly one wins', async () => {
    const user = await createAdmin(app)
    const session = await login(app, user.phone)
    const results = await Promise.all([refresh(app, session.cookie), refresh(app, session.cookie), refresh(app, session.cookie)])
    expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401])
  })

  test('an absent, unknown or expired refresh token is 401', async () => {
    expect((await app.fetch('/admin/auth/refresh', { method: 'POST' })).status).toBe(401)
    expect((await refresh(app, 'svc_admin_refresh=not-a-real-token')).status).toBe(401)
    const clock = fixedClock(new Date('2026-07-01T00:00:00.000Z'))
    const own = await startApp({ clock })
    try {
      const user = await createAdmin(own)
      const session = await login(own, user.phone)
      clock.advance(30 * 86400_000 + 1000)
      expect((await refresh(own, session.cookie)).status).toBe(401)
    } finally {
      await own.destroy()
    }
  })

  test('refresh and logout refuse a foreign Origin with 403 and accept the admin origin', async () => {
    const user = await createAdmin(app)
    const session = await login(app, user.phone)
    expect((await refresh(app, session.cookie, { origin: 'https://evil.test' })).status).toBe(403)
    const logout = await app.fetch('/admin/auth/logout', { method: 'POST', headers: { cookie: session.cookie, origin: 'https://evil.test' } })
    expect(logout.status).toBe(403)
    const ok = await refresh(app, session.cookie, { origin: 'https://admin.test' })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true')
  })

  test('login from a foreign Origin is 403 and sets no cookie, even as a form post that needs no preflight (login CSRF)', async () => {
    const user = await createAdmin(app)
    const form = await app.fetch('/admin/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.test' },
      body: new URLSearchParams({ phone: user.phone, password: PASSWORD }),
    })
    expect(form.status).toBe(403)
    expect(form.headers.get('set-cookie')).toBeNull()
    const json = await app.fetch('/admin/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.test' },
      body: JSON.stringify({ phone: user.phone, password: PASSWORD }),
    })
    expect(json.status).toBe(403)
    const fromPortal = await app.fetch('/admin/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://admin.test' },
      body: JSON.stringify({ phone: user.phone, password: PASSWORD }),
    })
    expect(fromPortal.status).toBe(200)
  })
})

describe('logout', () => {
  test('logout ends the session at once: cookie cleared, refresh and access token refused', async () => {
    const user = await createAdmin(app)
    const session = await login(app, user.phone)
    const res = await app.fetch('/admin/auth/logout', { method: 'POST', headers: { cookie: session.cookie } })
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({ ok: true })
    const cleared = res.headers.get('set-cookie')!
    expect(cleared).toStartWith('svc_admin_refresh=;')
    for (const attribute of ['Max-Age=0', 'Path=/admin/auth', 'HttpOnly', 'Secure', 'SameSite=None', 'Partitioned']) {
      expect(cleared.split('; ')).toContain(attribute)
    }
    expect((await refresh(app, session.cookie)).status).toBe(401)
    expect((await me(app, session)).status).toBe(401)
  })

  test('logout without a cookie still answers 200 and clears it', async () => {
    const res = await app.fetch('/admin/auth/logout', { method: 'POST' })
    expect(res.status).toBe(200)
    expect(res.headers.get('set-cookie')).toContain('Max-Age=0')
  })

  test('logging out one session leaves the others working', async () => {
    const user = await createAdmin(app)
    const a = await login(app, user.phone)
    const b = await login(app, user.phone)
    await app.fetch('/admin/auth/logout', { method: 'POST', headers: { cookie: a.cookie } })
    expect((await me(app, b)).status).toBe(200)
  })
})

describe('forgot and reset password', () => {
  test('forgot-password answers 200 for an unknown e-mail and sends nothing', async () => {
    const before = sink.messages.length
    const res = await send(app, 'POST', '/admin/auth/forgot-password', { email: 'nobody@spaces.test' })
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({ ok: true })
    await Bun.sleep(300)
    expect(sink.messages.length).toBe(before)
  })

  test('forgot-password for an inactive account sends nothing', async () => {
    const user = await createAdmin(app, { status: 'inactive' })
    expect((await send(app, 'POST', '/admin/auth/forgot-password', { email: user.email })).status).toBe(200)
    await Bun.sleep(300)
    expect(sink.messages.some((m) => m.text?.includes(user.name))).toBe(false)
  })

  test('a reset link arrives for an active account, and resetting ends every session and clears the lockout', async () => {
    const user = await createAdmin(app)
    const session = await login(app, user.phone)
    await app.db.execute(sql`UPDATE admin_users SET failed_login_count = ${7} WHERE id = ${user.id}`)
    expect((await send(app, 'POST', '/admin/auth/forgot-password', { email: user.email!.toUpperCase() })).status).toBe(200)
    const mail = await sink.waitFor((m) => (m.to as { text: string }).text.includes(user.email!))
    expect(mail.text).toContain(`${app.config.auth.adminPortalUrl}/reset-password?token=`)
    expect(mail.html).toContain(`${app.config.auth.adminPortalUrl}/reset-password?token=`)
    const token = resetLink(mail.text!)!

    const res = await send(app, 'POST', '/admin/auth/reset-password', { token, password: NEW_PASSWORD })
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({ ok: true })
    expect((await me(app, session)).status).toBe(401)
    expect((await refresh(app, session.cookie)).status).toBe(401)
    const row = await app.db.one<{ n: number }>(sql`SELECT failed_login_count AS n FROM admin_users WHERE id = ${user.id}`)
    expect(Number(row!.n)).toBe(0)
    await login(app, user.phone, NEW_PASSWORD)
    expect((await send(app, 'POST', '/admin/auth/login', { phone: user.phone, password: PASSWORD })).status).toBe(401)

    const again = await send(app, 'POST', '/admin/auth/reset-password', { token, password: 'yet another fine passphrase' })
    expect(again.status).toBe(400)
  })

  test('a newer reset link makes the older one stop working', async () => {
    const user = await createAdmin(app)
    await send(app, 'POST', '/admin/auth/forgot-password', { email: user.email })
    const first = resetLink((await sink.waitFor((m) => (m.to as { text: string }).text.includes(user.email!))).text!)!
    const count = sink.messages.length
    await send(app, 'POST', '/admin/auth/forgot-password', { email: user.email })
    await sink.waitFor((m) => sink.messages.indexOf(m) >= count && (m.to as { text: string }).text.includes(user.email!))
    expect((await send(app, 'POST', '/admin/auth/reset-password', { token: first, password: NEW_PASSWORD })).status).toBe(400)
  })

  test('an expired, unknown or malformed token is 400 and a weak password is 400 with fields.password', async () => {
    const clock = fixedClock(new Date('2026-08-01T08:00:00.000Z'))
    const own = await startApp({ clock, env: sink.env })
    try {
      const user = await createAdmin(own, { email: `expiry.${Date.now()}@spaces.test` })
      await send(own, 'POST', '/admin/auth/forgot-password', { email: user.email })
      const token = resetLink((await sink.waitFor((m) => (m.to as { text: string }).text.includes(user.email!))).text!)!
      const weak = await send(own, 'POST', '/admin/auth/reset-password', { token, password: 'short' })
      expect(weak.status).toBe(400)
      expect((await json(weak)).fields).toHaveProperty('password')
      clock.advance(60 * 60_000 + 1000)
      const expired = await send(own, 'POST', '/admin/auth/reset-password', { token, password: NEW_PASSWORD })
      expect(expired.status).toBe(400)
    } finally {
      await own.destroy()
    }
    expect((await send(app, 'POST', '/admin/auth/reset-password', { token: 'nope', password: NEW_PASSWORD })).status).toBe(400)
    expect((await send(app, 'POST', '/admin/auth/reset-password', { token: 42, password: NEW_PASSWORD })).status).toBe(400)
    expect((await send(app, 'POST', '/admin/auth/forgot-password', { email: 'not-an-email' })).status).toBe(400)
  })
})

describe('security events in the log', () => {
  test('logins, lockouts and reuse are logged as events without any password, token or cookie', async () => {
    const lines: string[] = []
    configureLog(
      'info',
      new Writable({
        write(chunk, _e, done) {
          lines.push(String(chunk))
          done()
        },
      }),
    )
    // Its own app: the shared one's loopback IP has used up its failure budget in other tests.
    const own = await startApp()
    try {
      const user = await createAdmin(own)
      const session = await login(own, user.phone)
      for (let i = 0; i < 10; i++) await send(own, 'POST', '/admin/auth/login', { phone: user.phone, password: `secret-guess-${i}-xyz` })
      await refresh(own, session.cookie)
      await refresh(own, session.cookie)
      const text = lines.join('')
      const events = lines.map((l) => JSON.parse(l).event)
      for (const event of ['login_succeeded', 'login_failed', 'login_locked', 'refresh_token_reuse']) expect(events).toContain(event)
      for (const secret of [PASSWORD, 'secret-guess-3-xyz', session.refreshToken, session.accessToken, user.phone]) {
        expect(text).not.toContain(secret)
      }
    } finally {
      configureLog('silent')
      await own.destroy()
    }
  })
})
