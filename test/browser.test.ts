import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import sql from 'sql-template-tag'
import { createAdmin } from './factories.ts'
import { startApp, type TestApp } from './harness.ts'

/**
 * The service as a browser meets it: headless Chromium (Debian's package, installed by
 * scripts/ensure-chromium.sh, never downloaded by a tool) loads small pages from three loopback
 * origins and calls the API with fetch, so CORS, preflights, exposed headers and the refresh cookie
 * are judged by a real browser. The pages report what they saw; the test also records what went over
 * the wire (DevTools protocol), to tell "the server refused" from "the browser withheld".
 *
 * Hostnames matter: a site is scheme + host, ports ignored. The API listens on http://127.0.0.1 and
 * every page comes from http://localhost, so the admin portal is cross-site to the API, as in
 * production, and its refresh cookie is a third-party cookie, kept in the portal site's partition
 * (CHIPS). Chromium counts both hosts as potentially trustworthy, so the Secure cookie is accepted
 * over http. The "evil" page shares the portal's site, and so its cookie partition, but not its
 * origin: the hardest case for the Origin check of refresh and logout (decision 26).
 */

const CHROMIUM = '/usr/bin/chromium'
const TTL_SEC = 3
const COOKIE = 'svc_admin_refresh'

/** In-page helpers: every call resolves to a plain object, a rejected fetch to `{ error }`. */
const COMMON = `
const API = new URL(location.href).searchParams.get('api');
const attempt = async (fn) => {
  try { return await fn() } catch (e) { return { error: { name: e.name, message: e.message } } }
};
const read = async (res) => {
  const text = await res.text();
  let body; try { body = JSON.parse(text) } catch { body = text }
  return { status: res.status, body, requestId: res.headers.get('x-request-id'), etag: res.headers.get('etag') };
};
`

/** The landing page: reads a gallery and posts an enquiry, without credentials. */
const SITE_PAGE = `<!doctype html><meta charset="utf-8"><title>Spaces</title><h1>Spaces</h1>
<script>${COMMON}
window.site = {
  gallery: (slug, cache = 'default') => attempt(async () => read(await fetch(API + '/spaces/' + slug + '/gallery', { cache }))),
  enquire: (body) => attempt(async () => read(await fetch(API + '/enquiries', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  }))),
  /** An opaque request: the server answers, the page may not read it. */
  probe: (path) => attempt(async () => ({ type: (await fetch(API + path, { mode: 'no-cors' })).type })),
  /** What a hostile page could try with the portal's cookie: simple requests, so no preflight. */
  withCookie: (path) => attempt(async () => read(await fetch(API + path, { method: 'POST', credentials: 'include' }))),
};
</script>`

/** The admin portal: the access token lives in memory, the refresh token in the API's cookie. */
const PORTAL_PAGE = `<!doctype html><meta charset="utf-8"><title>Portal</title><h1>Portal</h1>
<script>${COMMON}
let accessToken = null;
const keep = (r) => { if (r.status === 200 && r.body && r.body.accessToken) accessToken = r.body.accessToken; return r };
const call = (path) => attempt(async () => read(await fetch(API + path, { headers: { authorization: 'Bearer ' + accessToken } })));
window.portal = {
  login: (phone, password) => attempt(async () => keep(await read(await fetch(API + '/admin/auth/login', {
    method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ phone, password }),
  })))),
  call,
  refresh: (credentials = 'include') => attempt(async () => keep(await read(await fetch(API + '/admin/auth/refresh', { method: 'POST', credentials })))),
  logout: () => attempt(async () => read(await fetch(API + '/admin/auth/logout', { method: 'POST', credentials: 'include' }))),
  /** Calls an admin route with the token it holds until the call is refused. */
  async untilRefused(path, limitMs) {
    const start = Date.now();
    for (;;) {
      const r = await call(path);
      if (r.status !== 200 || Date.now() - start > limitMs) return { ...r, afterMs: Date.now() - start };
      await new Promise((ok) => setTimeout(ok, 100));
    }
  },
};
</script>`

/** A static-page server on its own loopback port: one origin. */
const pageServer = (html: string) =>
  Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } }) })

const siteServer = pageServer(SITE_PAGE)
const evilServer = pageServer(SITE_PAGE)
const portalServer = pageServer(PORTAL_PAGE)
const origin = (server: { port?: number }) => `http://localhost:${server.port}`

/** One request as it went over the wire. */
interface Wire {
  method?: string
  path?: string
  status?: number
  cookie?: string
}

let app: TestApp
let browser: Browser
let context: BrowserContext
const consoleLines: string[] = []
const wire: Wire[] = []

beforeAll(async () => {
  app = await startApp({
    env: {
      PUBLIC_ORIGINS: origin(siteServer),
      ADMIN_ORIGINS: origin(portalServer),
      ADMIN_PORTAL_URL: origin(portalServer),
      ACCESS_TOKEN_TTL: `${TTL_SEC}s`,
    },
  })
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] })
  context = await browser.newContext()
}, 30_000)

afterAll(async () => {
  console.log(`browser: Chromium ${browser?.version()}, ${wire.length} API requests observed; proved:\n  - ${proved.join('\n  - ')}`)
  await browser?.close()
  for (const server of [siteServer, evilServer, portalServer]) server.stop(true)
  await app?.destroy()
})

const header = (headers: Record<string, string>, name: string) =>
  Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1]

/** Opens a page of `server`, recording its console and every request it makes to the API. */
async function open(server: { port?: number }): Promise<Page> {
  const page = await context.newPage()
  page.on('console', (message) => consoleLines.push(`${origin(server)}: ${message.text()}`))
  const cdp = await context.newCDPSession(page)
  const byId = new Map<string, Wire>()
  const entry = (id: string) => {
    let w = byId.get(id)
    if (!w) byId.set(id, (w = {}))
    return w
  }
  cdp.on('Network.requestWillBeSent', (e) => {
    if (!e.request.url.startsWith(app.url)) return
    const w = entry(e.requestId)
    w.method = e.request.method
    w.path = new URL(e.request.url).pathname
    wire.push(w)
  })
  cdp.on('Network.requestWillBeSentExtraInfo', (e) => {
    entry(e.requestId).cookie = header(e.headers as Record<string, string>, 'cookie')
  })
  cdp.on('Network.responseReceivedExtraInfo', (e) => {
    entry(e.requestId).status = e.statusCode
  })
  await cdp.send('Network.enable')
  await page.goto(`${origin(server)}/?api=${encodeURIComponent(app.url)}`)
  return page
}

/** The latest answered request `method path` on the wire (the protocol's events may trail the page a little). */
async function onWire(method: string, path: string, from = 0): Promise<Wire> {
  for (let i = 0; i < 100; i++) {
    const found = wire.slice(from).findLast((w) => w.method === method && w.path === path && w.status !== undefined)
    if (found) return found
    await Bun.sleep(20)
  }
  throw new Error(`${method} ${path} never answered on the wire`)
}

const refreshCookie = async () => (await context.cookies()).find((c) => c.name === COOKIE)

const enquiry = {
  name: 'Grace Hopper',
  phone: '+44 20 7946 0123',
  email: 'grace@example.com',
  message: 'Could we book the function hall for a launch in May?',
  source: 'genesis',
}

const enquiryCount = async () => Number((await app.db.one<{ n: number }>(sql`SELECT COUNT(*) AS n FROM enquiries`))!.n)

/** What a page's helper reports. */
interface Reply {
  status: number
  // biome-ignore lint: bodies are asserted on loosely
  body: any
  requestId: string | null
  etag: string | null
  error?: { name: string; message: string }
}
/** The pages' globals, as seen inside `page.evaluate` (these callbacks run in the browser). */
declare const site: {
  gallery(slug: string, cache?: string): Promise<Reply>
  enquire(body: unknown): Promise<Reply>
  probe(path: string): Promise<{ type: string }>
  withCookie(path: string): Promise<Reply>
}
declare const portal: {
  login(phone: string, password: string): Promise<Reply>
  call(path: string): Promise<Reply>
  refresh(credentials?: string): Promise<Reply>
  logout(): Promise<Reply>
  untilRefused(path: string, limitMs: number): Promise<Reply & { afterMs: number }>
}
let storedId = ''
const proved: string[] = []

describe('a page on the allowed public origin', () => {
  test('reads the gallery (also revalidated: 304 with CORS) and posts an enquiry', async () => {
    const page = await open(siteServer)
    const gallery = await page.evaluate(() => site.gallery('genesis'))
    expect(gallery.error).toBeUndefined()
    expect(gallery.status).toBe(200)
    expect(gallery.body).toMatchObject({ slug: 'genesis', images: [] })
    // The exposed headers (P8) are readable by the page.
    expect(gallery.requestId).toBeTruthy()
    expect(gallery.etag).toMatch(/^"/)

    // A revalidation goes out with If-None-Match and comes back 304; the browser serves its copy.
    const mark = wire.length
    const again = await page.evaluate(() => site.gallery('genesis', 'no-cache'))
    expect(again).toMatchObject({ status: 200, etag: gallery.etag, body: gallery.body })
    expect((await onWire('GET', '/spaces/genesis/gallery', mark)).status).toBe(304)

    const posted = await page.evaluate((body) => site.enquire(body), enquiry)
    expect(posted.error).toBeUndefined()
    expect(posted.status).toBe(200)
    expect(posted.body).toEqual({ ok: true, id: expect.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/) })
    expect((await onWire('OPTIONS', '/enquiries')).status).toBe(204)
    const row = await app.db.one<{ name: string; status: string; source: string; referer: string; user_agent: string }>(
      sql`SELECT name, status, source, referer, user_agent FROM enquiries WHERE id = ${posted.body.id}`,
    )
    expect(row).toMatchObject({ name: enquiry.name, status: 'new', source: 'genesis', referer: `${origin(siteServer)}/` })
    expect(row!.user_agent).toContain('Chrome')
    storedId = posted.body.id
    proved.push('public origin reads the gallery (200, then 304 on revalidation) and posts an enquiry (200 { ok, id })')
    await page.close()
  }, 20_000)
})

describe('the same page on a disallowed origin', () => {
  test('is blocked by CORS: both fetches reject with TypeError and nothing is stored', async () => {
    const before = await enquiryCount()
    const mark = wire.length
    const page = await open(evilServer)
    const gallery = await page.evaluate(() => site.gallery('genesis'))
    expect(gallery.error?.name).toBe('TypeError')
    // Decision 29: the read is answered, and the browser withholds it for want of this origin in
    // Access-Control-Allow-Origin. With the allowed page's copy in the cache (another Origin, so a
    // Vary mismatch) Chromium asks with If-None-Match and gets 304: that copy is not handed over either.
    expect([200, 304]).toContain((await onWire('GET', '/spaces/genesis/gallery', mark)).status!)

    const posted = await page.evaluate((body) => site.enquire(body), { ...enquiry, name: 'Evil Page' })
    expect(posted.error?.name).toBe('TypeError')
    // The preflight got its 204 without Allow-* headers, so the POST itself never left the browser.
    expect((await onWire('OPTIONS', '/enquiries', mark)).status).toBe(204)
    expect(wire.slice(mark).filter((w) => w.method === 'POST' && w.status !== undefined)).toEqual([])
    expect(await enquiryCount()).toBe(before)

    // The server is reachable from this page (an opaque answer): the refusals above are CORS.
    expect(await page.evaluate(() => site.probe('/spaces/genesis/gallery'))).toEqual({ type: 'opaque' })
    expect(consoleLines.some((line) => line.startsWith(origin(evilServer)) && line.includes('blocked by CORS policy'))).toBe(true)
    proved.push('a foreign origin is blocked by CORS (TypeError; preflighted POST never sent, no row)')
    await page.close()
  }, 20_000)
})

describe('a page on the admin origin', () => {
  test('logs in, token expires (401), refreshes with the cookie, retries, logs out; refresh then 401', async () => {
    const admin = await createAdmin(app)
    const tokens = () => app.db.query<{ revoked_at: unknown }>(sql`SELECT revoked_at FROM refresh_tokens WHERE user_id = ${admin.id}`)
    const page = await open(portalServer)
    const call = (path: string) => page.evaluate((p) => portal.call(p), path)

    const login = await page.evaluate(({ phone, password }) => portal.login(phone, password), { phone: admin.phone, password: admin.password })
    expect(login.error).toBeUndefined()
    expect(login.status).toBe(200)
    expect(login.body.admin).toMatchObject({ id: admin.id, phone: admin.phone })
    // The cookie as the browser keeps it: the API's host and path, HttpOnly, in the portal site's partition.
    const first = await refreshCookie()
    expect(first).toMatchObject({ domain: '127.0.0.1', path: '/admin/auth', httpOnly: true, secure: true, sameSite: 'None' })
    expect(first!.partitionKey).toBe('http://localhost')

    expect(await call('/admin/auth/me')).toMatchObject({ status: 200, body: { admin: { id: admin.id } } })
    const list = await call('/admin/enquiries')
    expect(list.status).toBe(200)
    expect(list.body.data.map((e: { id: string }) => e.id)).toContain(storedId)

    // A page of the same site but another origin shares the cookie partition: its simple POSTs carry
    // the cookie, and the Origin check refuses them (403) before the session is touched.
    const hostile = await open(evilServer)
    for (const path of ['/admin/auth/refresh', '/admin/auth/logout']) {
      const mark = wire.length
      expect((await hostile.evaluate((p) => site.withCookie(p), path)).error?.name).toBe('TypeError')
      expect(await onWire('POST', path, mark)).toMatchObject({ status: 403, cookie: `${COOKIE}=${first!.value}` })
    }
    await hostile.close()
    expect((await refreshCookie())?.value).toBe(first!.value)
    expect(await tokens()).toEqual([{ revoked_at: null }])

    // The access token runs out.
    const expired = await page.evaluate((limit) => portal.untilRefused('/admin/auth/me', limit), (TTL_SEC + 2) * 1000)
    expect(expired).toMatchObject({ status: 401, body: { error: 'Invalid or expired access token' } })
    expect(expired.afterMs).toBeLessThanOrEqual((TTL_SEC + 1) * 1000)

    // Without credentials the browser sends no cookie, and there is no session to refresh.
    let mark = wire.length
    expect((await page.evaluate(() => portal.refresh('omit'))).status).toBe(401)
    expect((await onWire('POST', '/admin/auth/refresh', mark)).cookie).toBeUndefined()

    mark = wire.length
    const refreshed = await page.evaluate(() => portal.refresh())
    expect(refreshed.error).toBeUndefined()
    expect(refreshed.status).toBe(200)
    expect(refreshed.body.accessToken).not.toBe(login.body.accessToken)
    expect((await onWire('POST', '/admin/auth/refresh', mark)).cookie).toBe(`${COOKIE}=${first!.value}`)
    const rotated = await refreshCookie()
    expect(rotated?.value).toBeTruthy()
    expect(rotated!.value).not.toBe(first!.value)

    const retried = await call('/admin/enquiries')
    expect(retried.status).toBe(200)
    expect(retried.body.data.map((e: { id: string }) => e.id)).toContain(storedId)

    mark = wire.length
    expect(await page.evaluate(() => portal.logout())).toMatchObject({ status: 200, body: { ok: true } })
    expect((await onWire('POST', '/admin/auth/logout', mark)).cookie).toBe(`${COOKIE}=${rotated!.value}`)
    expect(await refreshCookie()).toBeUndefined()
    expect((await tokens()).every((t) => t.revoked_at !== null)).toBe(true)

    expect((await page.evaluate(() => portal.refresh())).status).toBe(401)
    // P16: the access token ended with its session.
    expect((await call('/admin/auth/me')).status).toBe(401)
    proved.push(
      `admin origin: login, bearer calls, expiry 401 after ${expired.afterMs} ms, cookie refresh (rotated) and retry, ` +
        'logout (cookie cleared, session revoked), refresh 401; same-site foreign origin refused 403 with the cookie',
    )
    await page.close()
  }, 30_000)
})
