import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Elysia, t } from 'elysia'
import { json, startApp, type TestApp } from '../../test/harness.ts'
import { createApp, createDeps } from '../app.ts'
import { REFRESH_COOKIE } from '../features/auth/cookie.ts'
import { OPENAPI_PATH, openapiDocument } from './openapi.ts'

// biome-ignore lint: the document is checked by hand, key by key
type Doc = any
type Route = { method: string; path: string; hasBody: boolean }

/** The auth entry points: no access token (api.md, Admin auth). */
const ENTRY_POINTS = ['/admin/auth/login', '/admin/auth/refresh', '/admin/auth/logout', '/admin/auth/forgot-password', '/admin/auth/reset-password']
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

let app: TestApp
let doc: Doc
let routes: Route[]

/** Elysia's `/admin/users/` and `:id` as the document writes them. */
const docPath = (path: string) => (path.length > 1 ? path.replace(/\/$/, '') : path).replace(/:(\w+)/g, '{$1}')

function operations(document: Doc): { key: string; path: string; method: string; op: Doc }[] {
  return Object.entries(document.paths as Record<string, Doc>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, path, method, op })),
  )
}

/** The routes whose operation lacks a success response with a body schema (204 has no body). */
function undocumented(document: Doc, of: Route[]): string[] {
  const missing: string[] = []
  for (const route of of) {
    const op = document.paths?.[docPath(route.path)]?.[route.method.toLowerCase()]
    const success = Object.entries((op?.responses ?? {}) as Record<string, Doc>).filter(([status]) => /^2\d\d$/.test(status))
    const described = success.some(([status, res]) => (status === '204' ? res.content === undefined : res.content?.['application/json']?.schema !== undefined))
    if (!described) missing.push(`${route.method} ${route.path}`)
  }
  return missing
}

/** A `$ref` followed into `components`. */
const resolve = (schema: Doc): Doc => (schema?.$ref ? doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema)

beforeAll(async () => {
  app = await startApp()
  // The router's own list, from an app built like the served one (not listening): the document's
  // route and the static media files (SERVE_MEDIA, on in tests) are not part of the API.
  const twin = createApp(createDeps(app.config, app.db))
  const mediaFiles = `${new URL(app.config.media.assetBaseUrl).pathname.replace(/\/+$/, '')}/*`
  routes = twin.routes
    .filter((r) => r.path !== OPENAPI_PATH && r.path !== mediaFiles)
    .map((r) => ({ method: r.method, path: r.path, hasBody: r.hooks?.body !== undefined }))
  doc = await json(await app.fetch(OPENAPI_PATH))
})
afterAll(() => app.destroy())

describe('GET /openapi.json', () => {
  test('is still served after other routes have answered (Elysia mutates schemas on first use)', async () => {
    const own = await startApp()
    try {
      for (const path of ['/health', '/nope', '/spaces/genesis/gallery', '/admin/enquiries']) await (await own.fetch(path)).text()
      await (await own.fetch('/enquiries', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).text()
      const res = await own.fetch(OPENAPI_PATH)
      expect(res.status).toBe(200)
      expect((await json(res)).openapi).toMatch(/^3\.1\./)
    } finally {
      await own.destroy()
    }
  })

  test('serves an OpenAPI 3.1 document as JSON, without a token', async () => {
    const res = await app.fetch(OPENAPI_PATH)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('application/json')
    const body = await json(res)
    expect(body.openapi).toMatch(/^3\.1\.\d+$/)
    expect(body.info).toMatchObject({ title: expect.any(String), version: expect.any(String) })
  })

  test('is under no CORS policy: an allowed origin gets no Access-Control header', async () => {
    for (const origin of ['https://site.test', 'https://admin.test']) {
      const res = await app.fetch(OPENAPI_PATH, { headers: { origin } })
      expect(res.status).toBe(200)
      expect(res.headers.get('access-control-allow-origin')).toBeNull()
    }
  })

  test('no documentation page is served', async () => {
    for (const path of ['/openapi', '/swagger', '/openapi/json', '/docs']) {
      const res = await app.fetch(path)
      expect(res.status).toBe(404)
      expect(res.headers.get('content-type')).toStartWith('application/json')
    }
  })
})

describe('routes', () => {
  test('the router has the routes of api.md', () => {
    // A guard against comparing an empty list with an empty document.
    expect(routes.length).toBeGreaterThanOrEqual(25)
  })

  test('every route of the app is in the document, and nothing else', () => {
    const fromRouter = routes.map((r) => `${r.method} ${docPath(r.path)}`).sort()
    expect(operations(doc).map((o) => o.key).sort()).toEqual(fromRouter)
  })

  test('every route documents a success response with its body schema (204 without a body)', () => {
    expect(undocumented(doc, routes)).toEqual([])
  })

  test('the check above names a route that has no response schema', async () => {
    const other = new Elysia()
      .use(openapiDocument())
      .get('/described', () => ({ ok: true }), { response: { 200: t.Object({ ok: t.Boolean() }) } })
      .get('/bare', () => 'hi')
    const document = await (await other.handle(new Request(`http://localhost${OPENAPI_PATH}`))).json()
    const of = other.routes.filter((r) => r.path !== OPENAPI_PATH).map((r) => ({ method: r.method, path: r.path, hasBody: false }))
    expect(undocumented(document, of)).toEqual(['GET /bare'])
  })

  test('every route with a body schema documents its JSON request body', () => {
    for (const route of routes.filter((r) => r.hasBody)) {
      const op = doc.paths[docPath(route.path)][route.method.toLowerCase()]
      expect({ route: route.path, schema: op.requestBody?.content?.['application/json']?.schema }).toEqual({ route: route.path, schema: expect.any(Object) })
    }
  })

  test('every error response has the error envelope; POST /enquiries has the ok: false one', () => {
    const envelope = (key: string) => (key === 'POST /enquiries' ? 'OkErrorBody' : 'ErrorBody')
    for (const { key, op } of operations(doc)) {
      for (const [status, res] of Object.entries(op.responses as Record<string, Doc>)) {
        if (Number(status) < 400 || (key === 'GET /health' && status === '503')) continue
        expect({ key, status, ref: res.content?.['application/json']?.schema?.$ref }).toEqual({ key, status, ref: `#/components/schemas/${envelope(key)}` })
      }
    }
    expect(resolve({ $ref: '#/components/schemas/ErrorBody' })).toMatchObject({ required: ['error', 'requestId'], properties: { error: {}, requestId: {}, fields: {} } })
    expect(resolve({ $ref: '#/components/schemas/OkErrorBody' })).toMatchObject({ required: ['ok', 'error'], properties: { ok: { const: false } } })
  })

  test('the documented error statuses of api.md are there', () => {
    const statuses = (path: string, method = 'get') => Object.keys(doc.paths[path][method].responses)
    expect(statuses('/health')).toContain('503')
    expect(statuses('/spaces/{slug}/gallery')).toContain('404')
    expect(statuses('/enquiries', 'post')).toEqual(expect.arrayContaining(['200', '422', '429']))
    expect(statuses('/admin/auth/login', 'post')).toEqual(expect.arrayContaining(['200', '401', '429']))
    expect(statuses('/admin/auth/refresh', 'post')).toContain('401')
    expect(statuses('/admin/auth/reset-password', 'post')).toContain('400')
    expect(statuses('/admin/media', 'post')).toEqual(expect.arrayContaining(['201', '413', '422']))
    expect(statuses('/admin/media/order', 'patch')).toContain('422')
    expect(statuses('/admin/media/{id}', 'delete')).toContain('204')
    expect(statuses('/admin/enquiries/{id}')).toContain('404')
    expect(statuses('/admin/enquiries/{id}', 'patch')).toContain('400')
    expect(statuses('/admin/users', 'post')).toEqual(expect.arrayContaining(['201', '403', '422']))
    expect(statuses('/admin/users/{id}/password', 'post')).toContain('403')
  })
})

describe('security', () => {
  test('admin routes require the bearer token and document 401, except the auth entry points', () => {
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
    for (const { key, path, op } of operations(doc)) {
      const bearer = path.startsWith('/admin/') && !ENTRY_POINTS.includes(path)
      const schemes = (op.security ?? []).flatMap((requirement: object) => Object.keys(requirement))
      expect({ key, bearer: schemes.includes('bearer') }).toEqual({ key, bearer })
      if (bearer) expect({ key, has401: '401' in op.responses }).toEqual({ key, has401: true })
    }
  })

  test('refresh and logout take the refresh cookie; login and refresh set it, logout clears it', () => {
    expect(doc.components.securitySchemes.refreshCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: REFRESH_COOKIE })
    for (const path of ['/admin/auth/refresh', '/admin/auth/logout']) expect(doc.paths[path].post.security).toEqual([{ refreshCookie: [] }])
    for (const path of ['/admin/auth/login', '/admin/auth/refresh']) {
      expect(doc.paths[path].post.responses['200'].headers['set-cookie'].schema.description).toStartWith(`${REFRESH_COOKIE}=<token>`)
    }
    expect(doc.paths['/admin/auth/logout'].post.responses['200'].headers['set-cookie'].schema.description).toContain('Max-Age=0')
  })

  test('every security requirement names a declared scheme', () => {
    for (const { op } of operations(doc)) {
      for (const requirement of op.security ?? []) for (const name of Object.keys(requirement)) expect(doc.components.securitySchemes).toHaveProperty(name)
    }
  })
})

describe('shape', () => {
  test('the upload takes multipart/form-data: the image file and its text fields', () => {
    const form = doc.paths['/admin/media'].post.requestBody
    expect(form.required).toBe(true)
    expect(Object.keys(form.content)).toEqual(['multipart/form-data'])
    const { schema, encoding } = form.content['multipart/form-data']
    expect(schema.properties.file).toMatchObject({ type: 'string', format: 'binary' })
    expect(schema.properties.page).toEqual({ type: 'string', enum: ['genesis', 'hive'] })
    expect(schema.required).toEqual(['file', 'page', 'alt'])
    expect(Object.keys(schema.properties).sort()).toEqual(['alt', 'caption', 'category', 'file', 'page'])
    expect(encoding.file.contentType).toBe('image/*')
  })

  test('every $ref resolves, every path parameter is declared, operation ids are unique', () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? []
    expect(refs.length).toBeGreaterThan(0)
    for (const ref of new Set(refs)) expect(resolve({ $ref: JSON.parse(`{${ref}}`).$ref })).toBeDefined()
    const ids = operations(doc).map((o) => o.op.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    for (const { key, path, op } of operations(doc)) {
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort()
      const declared = (op.parameters ?? []).filter((p: Doc) => p.in === 'path').map((p: Doc) => p.name).sort()
      expect({ key, declared }).toEqual({ key, declared: inPath })
      for (const res of Object.values(op.responses as Record<string, Doc>)) expect(res.description).toEqual(expect.any(String))
    }
  })

  test('schemas are plain JSON Schema: no 3.0 nullable, no Elysia error messages, nulls as type arrays', () => {
    const leftovers: string[] = []
    const walk = (schema: Doc, at: string) => {
      if (!schema || typeof schema !== 'object') return
      if ('nullable' in schema) leftovers.push(`${at}.nullable`)
      if ('error' in schema) leftovers.push(`${at}.error`)
      for (const [key, value] of Object.entries(schema.properties ?? {})) walk(value, `${at}.${key}`)
      for (const key of ['items', 'additionalProperties']) walk(schema[key], `${at}.${key}`)
      for (const key of ['anyOf', 'oneOf', 'allOf']) for (const s of schema[key] ?? []) walk(s, `${at}.${key}`)
    }
    for (const [name, schema] of Object.entries(doc.components.schemas)) walk(schema, name)
    for (const { key, op } of operations(doc)) {
      for (const p of op.parameters ?? []) walk(p.schema, `${key} ${p.name}`)
      for (const media of Object.values(op.requestBody?.content ?? {}) as Doc[]) walk(media.schema, `${key} body`)
    }
    expect(leftovers).toEqual([])
    expect(resolve({ $ref: '#/components/schemas/MediaImage' }).properties.caption).toEqual({ type: ['string', 'null'] })
    expect(doc.paths['/admin/enquiries'].get.parameters.find((p: Doc) => p.name === 'perPage').schema).toEqual({ type: 'integer', minimum: 1, maximum: 100 })
  })
})
