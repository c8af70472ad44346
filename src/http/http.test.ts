import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Writable } from 'node:stream'
import { Elysia, t } from 'elysia'
import { bodyParser, BODY_LIMIT } from './body.ts'
import { cors } from './cors.ts'
import { errorFormatter, TooManyRequests, Unprocessable } from './errors.ts'
import { requestHeaders } from './request.ts'
import { configureLog } from '../lib/log.ts'
import { json, startApp, type TestApp } from '../../test/harness.ts'

// The plumbing in front of a few routes made for this test: schema validation, a crash, a thrown
// HttpError and the ok-enveloped POST /enquiries. The real app's routes get their own tests.
const lines: string[] = []
let server: ReturnType<typeof plumbed>
let base = ''

function plumbed() {
  return new Elysia()
    .use(requestHeaders({ production: false }))
    .use(cors({ publicOrigins: ['https://site.test'], adminOrigins: ['https://admin.test'] }))
    .use(errorFormatter)
    .use(bodyParser({ timeoutMs: 500 }))
    .post('/things', ({ body }) => body, {
      body: t.Object({ name: t.String({ minLength: 2 }), count: t.Integer({ minimum: 1 }) }),
    })
    .get('/crash', () => {
      throw new Error('connect ECONNREFUSED 10.1.2.3:3306 at secret/db.ts:42')
    })
    .get('/admin/limited', () => {
      throw new TooManyRequests('Too many attempts', 90)
    })
    .get('/admin/taken', () => {
      throw new Unprocessable('Already taken', { phone: 'is in use' })
    })
    .post('/enquiries', ({ body }) => ({ ok: true, body }), {
      body: t.Object({ name: t.String({ minLength: 2 }) }),
    })
}

beforeAll(() => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  configureLog('info', sink)
  server = plumbed().listen({ port: 0, hostname: '127.0.0.1' })
  base = `http://127.0.0.1:${server.server!.port}`
})
afterAll(async () => {
  await server.stop(true)
  configureLog('silent')
})

const post = (path: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  fetch(base + path, { method: 'POST', headers, body })

describe('error envelope', () => {
  test('an unknown route is a 404 in the JSON envelope whose requestId matches the header', async () => {
    const res = await fetch(`${base}/no/such/route`)
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toStartWith('application/json')
    const body = await json(res)
    expect(body).toEqual({ error: 'Not found', requestId: res.headers.get('x-request-id')! })
  })

  test('a schema failure is a 400 whose fields name each offending property', async () => {
    const res = await post('/things', JSON.stringify({ name: 'x', count: 'many' }))
    expect(res.status).toBe(400)
    const body = await json(res)
    expect(body.error).toBeString()
    expect(body.requestId).toBe(res.headers.get('x-request-id'))
    expect(Object.keys(body.fields).sort()).toEqual(['count', 'name'])
  })

  test('a missing property is reported under its own name', async () => {
    const res = await post('/things', JSON.stringify({ name: 'ok' }))
    expect(res.status).toBe(400)
    expect((await json(res)).fields).toHaveProperty('count')
  })

  test('malformed JSON is a 400 in the envelope', async () => {
    const res = await post('/things', '{"name": "ab", ')
    expect(res.status).toBe(400)
    expect(await json(res)).toMatchObject({ error: 'Malformed JSON body' })
  })

  test('a body that is not JSON where an object is expected is a 400, not a 500', async () => {
    const res = await post('/things', 'hello', { 'content-type': 'text/plain' })
    expect(res.status).toBe(400)
    expect((await json(res)).fields).toBeObject()
  })

  test('a JSON body over 100 kb is a 413', async () => {
    const res = await post('/things', JSON.stringify({ name: 'x'.repeat(BODY_LIMIT), count: 1 }))
    expect(res.status).toBe(413)
    expect((await json(res)).error).toBeString()
  })

  test('a chunked body over 100 kb without a length is a 413 too', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(16 * 1024))
    let sent = 0
    const stream = new ReadableStream({
      pull(controller) {
        if (sent++ > 10) controller.close()
        else controller.enqueue(chunk)
      },
    })
    const res = await fetch(`${base}/things`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: stream })
    expect(res.status).toBe(413)
  })

  test('a body trickling in slower than the body timeout is cut off with a 408 in the envelope', async () => {
    let sent = 0
    const stream = new ReadableStream({
      async pull(controller) {
        await Bun.sleep(200)
        if (sent++ > 20) controller.close()
        else controller.enqueue(new TextEncoder().encode(sent === 1 ? '{"name":"' : 'x'))
      },
    })
    const res = await fetch(`${base}/things`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: stream })
    expect(res.status).toBe(408)
    expect(await res.json()).toEqual({ error: expect.any(String), requestId: expect.any(String) })
    expect(sent).toBeLessThan(21) // answered before the client had sent its whole body
  })

  test('a body just under the limit is accepted', async () => {
    const name = 'x'.repeat(BODY_LIMIT - 100)
    const res = await post('/things', JSON.stringify({ name, count: 1 }))
    expect(res.status).toBe(200)
  })

  test('an unexpected error is a generic 500 whose detail is only in the log under the request id', async () => {
    const res = await fetch(`${base}/crash`)
    expect(res.status).toBe(500)
    const text = await res.text()
    expect(JSON.parse(text)).toEqual({ error: 'Internal server error', requestId: res.headers.get('x-request-id')! })
    expect(text).not.toContain('ECONNREFUSED')
    expect(text).not.toContain('db.ts')
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.requestId === res.headers.get('x-request-id'))
    expect(logged?.level).toBe('error')
    expect(JSON.stringify(logged)).toContain('ECONNREFUSED')
  })

  test('a 429 carries Retry-After', async () => {
    const res = await fetch(`${base}/admin/limited`)
    expect(res.status).toBe(429)
    expect(res.headers.get('retry-after')).toBe('90')
    expect((await json(res)).error).toBe('Too many attempts')
  })

  test('a 422 carries its fields', async () => {
    const res = await fetch(`${base}/admin/taken`)
    expect(res.status).toBe(422)
    expect(await json(res)).toMatchObject({ error: 'Already taken', fields: { phone: 'is in use' } })
  })
})

describe('POST /enquiries envelope (decision 5)', () => {
  test('a schema failure is a 422 of exactly { ok: false, error, fields }', async () => {
    const res = await post('/enquiries', JSON.stringify({ name: 'x' }))
    expect(res.status).toBe(422)
    const body = await json(res)
    expect(Object.keys(body).sort()).toEqual(['error', 'fields', 'ok'])
    expect(body.ok).toBe(false)
    expect(body.fields).toHaveProperty('name')
  })

  test('malformed JSON is a 400 with ok: false', async () => {
    const res = await post('/enquiries', '{')
    expect(res.status).toBe(400)
    expect(await json(res)).toEqual({ ok: false, error: 'Malformed JSON body' })
  })

  test('a body over 100 kb is a 413 with ok: false', async () => {
    const res = await post('/enquiries', JSON.stringify({ name: 'x'.repeat(BODY_LIMIT + 1) }))
    expect(res.status).toBe(413)
    expect((await json(res)).ok).toBe(false)
  })
})

describe('headers on every response', () => {
  test('each response has its own request id and the security headers', async () => {
    const [a, b] = await Promise.all([fetch(`${base}/no`), post('/things', JSON.stringify({ name: 'ab', count: 2 }))])
    for (const res of [a, b]) {
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('referrer-policy')).toBe('no-referrer')
      expect(res.headers.get('x-frame-options')).toBe('DENY')
      expect(res.headers.get('strict-transport-security')).toBeNull()
    }
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'))
  })
})

describe('CORS', () => {
  const preflight = (path: string, origin: string, method = 'POST') =>
    fetch(base + path, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': method } })

  test('a public preflight from an allowed origin is a 204 without credentials', async () => {
    const res = await preflight('/enquiries', 'https://site.test')
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('https://site.test')
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS')
    expect(res.headers.get('access-control-max-age')).toBe('86400')
    expect(res.headers.get('access-control-allow-credentials')).toBeNull()
    expect(res.headers.get('vary')).toContain('Origin')
    expect(await res.text()).toBe('')
  })

  test('the gallery route shares the public policy', async () => {
    const res = await preflight('/spaces/genesis/gallery', 'https://site.test', 'GET')
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('https://site.test')
  })

  test('an admin preflight from the admin origin allows credentials and the admin methods', async () => {
    const res = await preflight('/admin/auth/login', 'https://admin.test')
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('https://admin.test')
    expect(res.headers.get('access-control-allow-credentials')).toBe('true')
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, PATCH, DELETE, OPTIONS')
    expect(res.headers.get('access-control-allow-headers')).toContain('Authorization')
    expect(res.headers.get('access-control-max-age')).toBe('86400')
  })

  test('a disallowed origin gets no Access-Control-Allow-* header but the request is still answered', async () => {
    const res = await fetch(`${base}/admin/taken`, { headers: { origin: 'https://evil.test' } })
    expect(res.status).toBe(422)
    for (const [name] of res.headers) expect(name).not.toStartWith('access-control-allow')
    expect(res.headers.get('vary')).toContain('Origin')
  })

  test('a disallowed preflight is answered without any allow header', async () => {
    const res = await preflight('/enquiries', 'https://evil.test')
    expect(res.status).toBe(204)
    for (const [name] of res.headers) expect(name).not.toStartWith('access-control-allow')
  })

  test('Origin: null is never allowed', async () => {
    const res = await preflight('/enquiries', 'null')
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('the two policies do not mix: the site origin is refused on admin routes and the admin origin on public ones', async () => {
    const a = await preflight('/admin/auth/login', 'https://site.test')
    const b = await preflight('/enquiries', 'https://admin.test')
    expect(a.headers.get('access-control-allow-origin')).toBeNull()
    expect(b.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('error responses on a CORS route carry the CORS headers, so the portal can read its 401s', async () => {
    const res = await fetch(`${base}/admin/limited`, { headers: { origin: 'https://admin.test' } })
    expect(res.status).toBe(429)
    expect(res.headers.get('access-control-allow-origin')).toBe('https://admin.test')
    expect(res.headers.get('access-control-allow-credentials')).toBe('true')
  })

  test('an origin that only shares a prefix with an allowed one is refused', async () => {
    const res = await preflight('/enquiries', 'https://site.test.evil.example')
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('routes outside both policies carry no CORS headers', async () => {
    const res = await fetch(`${base}/things`, { method: 'POST', headers: { origin: 'https://site.test', 'content-type': 'application/json' }, body: '{}' })
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
    expect(res.headers.get('vary')).toBeNull()
  })
})

describe('the real app', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startApp()
  })
  afterAll(() => app.destroy())

  test('GET /health answers 200 with exactly the documented shape', async () => {
    const res = await app.fetch('/health')
    expect(res.status).toBe(200)
    const body = await json(res)
    expect(Object.keys(body).sort()).toEqual(['db', 'node', 'sha', 'status', 'uptimeSec'])
    expect(body.status).toBe('ok')
    expect(body.db.status).toBe('ok')
    expect(body.db.latencyMs).toBeNumber()
    expect(body.sha).toBe(app.config.gitSha)
    expect(Number.isInteger(body.uptimeSec)).toBe(true)
    expect(body.node).toBe(process.version)
  })

  test('GIT_SHA from the configuration is the health sha', async () => {
    const other = await startApp({ env: { GIT_SHA: 'abc1234' } })
    try {
      expect((await json(await other.fetch('/health'))).sha).toBe('abc1234')
    } finally {
      await other.destroy()
    }
  })

  test('an unknown route of the real app is a JSON 404, never HTML', async () => {
    const res = await app.fetch('/index.html')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toStartWith('application/json')
  })
})

describe('health with the database down', () => {
  test('GET /health answers 503 when the database really cannot be reached', async () => {
    // A port that was just free: nothing listens there, so every connection is refused.
    const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const port = probe.port
    probe.stop(true)
    const app = await startApp({
      migrate: false,
      env: { DB_DRIVER: 'mysql', DB_HOST: '127.0.0.1', DB_PORT: String(port), DB_USER: 'nobody', DB_PASSWORD: '', DB_NAME: 'none' },
    })
    try {
      const res = await app.fetch('/health')
      expect(res.status).toBe(503)
      const body = await json(res)
      expect(body.status).toBe('error')
      expect(body.db.status).toBe('error')
      expect(body.sha).toBeString()
    } finally {
      await app.destroy()
    }
  })

  test('GET /health answers 503 while the database hangs, within the ping timeout', async () => {
    // A server that accepts connections and never speaks: the MySQL handshake never completes.
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const app = await startApp({
      migrate: false,
      env: { DB_DRIVER: 'mysql', DB_HOST: '127.0.0.1', DB_PORT: String(silent.port), DB_USER: 'x', DB_PASSWORD: '', DB_NAME: 'x' },
    })
    try {
      const res = await app.fetch('/health', { signal: AbortSignal.timeout(10_000) })
      expect(res.status).toBe(503)
      expect((await json(res)).db.status).toBe('error')
    } finally {
      silent.stop(true)
      // Drops the database the harness made before the test pointed the app elsewhere.
      await app.destroy().catch(() => {})
    }
  })
})
