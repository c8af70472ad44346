import { toOpenAPISchema } from '@elysiajs/openapi'
import { FormatRegistry } from '@sinclair/typebox'
import { Elysia, type AnyElysia, type InternalRoute } from 'elysia'
import type { OpenAPIV3_1 } from 'openapi-types'
import { buildVersion } from '../build-info.ts'
import { REFRESH_COOKIE } from '../features/auth/cookie.ts'

// Importing @elysiajs/openapi replaces typebox's `email` format with zod's stricter one, which
// refuses valid addresses (`!q+.~x@d.example.vn`) and would change validation by an import. Put
// back Elysia's own check, which every schema here was written against.
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i
FormatRegistry.Set('email', (value) => EMAIL.test(value))

export const OPENAPI_PATH = '/openapi.json'
const OPENAPI_VERSION = '3.1.1'

/** Security requirements for a route's `detail`, by the names of the schemes below. */
export const security = {
  bearer: [{ bearer: [] }],
  refreshCookie: [{ refreshCookie: [] }],
}

const securitySchemes: Record<keyof typeof security, OpenAPIV3_1.SecuritySchemeObject> = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'The access token from login or refresh, held in memory; it lives ACCESS_TOKEN_TTL (15 minutes by default).',
  },
  refreshCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: REFRESH_COOKIE,
    description:
      'The opaque refresh token (30 days), set by login and refresh with `HttpOnly; Secure; SameSite=None; Partitioned; Path=/admin/auth`, ' +
      'rotated by every refresh and cleared by logout. A browser sends it when the portal calls with credentials.',
  },
}

type Document = OpenAPIV3_1.Document
type Obj = Record<string, unknown>

/** The two methods the generator reads; protected in Elysia's types, public at run time. */
interface RouteTable {
  getGlobalRoutes(): InternalRoute[]
  getGlobalDefinitions(): unknown
}

/**
 * `GET /openapi.json`: the OpenAPI 3.1 document of every route, from the routes' own schemas, built
 * once on first request. JSON only: no documentation page, nothing loaded from elsewhere.
 *
 * The generator is @elysiajs/openapi's, but not its plugin (decision P49): the plugin would document
 * no request body, because ours are read by the app's own parser (http/body.ts), which the generator
 * cannot see through. So it is given the routes with their bodies marked JSON, and its output is
 * tidied into plain OpenAPI 3.1 (`normalise`).
 */
export function openapiDocument() {
  const plugin = new Elysia({ name: 'http.openapi' })
  let document: Document | undefined
  return plugin.get(OPENAPI_PATH, () => (document ??= build(plugin as unknown as RouteTable)), { detail: { hide: true } })
}

function build(app: RouteTable): Document {
  const routes = app.getGlobalRoutes().map(asJson)
  const view: RouteTable = { getGlobalRoutes: () => routes, getGlobalDefinitions: () => app.getGlobalDefinitions() }
  const { paths } = toOpenAPISchema(view as unknown as AnyElysia, undefined, undefined, undefined, OPENAPI_VERSION)
  const tidy = normaliser()
  const doc = {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Spaces API',
      version: buildVersion,
      description:
        'Gallery, enquiry and admin API of the coworking site. Errors answer `{ error, requestId, fields? }`, ' +
        'except those of `POST /enquiries`, which answer `{ ok: false, error, fields? }`.',
    },
    // A plain copy: the generator shares objects with the routes (their `detail`), which stay as they are.
    paths: tidy.paths(JSON.parse(JSON.stringify(paths))),
    components: { schemas: tidy.schemas, securitySchemes },
  }
  return doc as unknown as Document
}

/** A route with a body schema takes JSON (api.md: "All bodies are JSON unless stated"). */
function asJson(route: InternalRoute): InternalRoute {
  if (!route.hooks?.body) return route
  return { ...route, hooks: { ...route.hooks, parse: [{ fn: 'application/json' }] } } as InternalRoute
}

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs']
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems']
const SCHEMA_ONE = ['items', 'additionalProperties', 'not']
// Elysia's numeric and boolean types also accept their string form (query strings); its schema says so
// with an extra branch like `{ type: 'string', format: 'integer' }`.
const COERCED = new Set(['integer', 'numeric', 'number', 'boolean'])
const SUCCESS: Record<string, string> = { 200: 'OK', 201: 'Created', 204: 'No content', 304: 'Not modified' }

/**
 * Plain OpenAPI 3.1 from the generator's paths: no trailing slash (Elysia's `/admin/users/`), no
 * content on a bodiless response (204, 304), schemas without Elysia's extras (its `error` messages,
 * the 3.0 `nullable`, the string forms it accepts for numbers in a query), and every schema with a
 * `title` (the models: `MediaImage`, `ErrorBody`...) once under `components.schemas`, referenced.
 */
function normaliser() {
  const schemas: Record<string, Obj> = {}
  const canonical = new Map<string, string>()

  function clean(input: unknown): unknown {
    if (!input || typeof input !== 'object' || Array.isArray(input)) return input
    let schema: Obj = { ...(input as Obj) }
    delete schema.error
    delete schema.nullable
    // A union of string literals (`oneOf` in http/schemas.ts) reads better as the enum it is.
    if (Array.isArray(schema.anyOf) && schema.anyOf.every((s: Obj) => typeof s.const === 'string')) {
      const { anyOf, ...outer } = schema
      schema = { ...outer, type: 'string', enum: (anyOf as Obj[]).map((s) => s.const) }
    }
    if (Array.isArray(schema.anyOf) && schema.anyOf.length === 2) {
      const rest = (schema.anyOf as Obj[]).filter((s) => !(s.type === 'string' && COERCED.has(String(s.format))))
      if (rest.length === 1) {
        const { anyOf: _, ...outer } = schema
        schema = { ...outer, ...rest[0] }
      }
    }
    for (const key of SCHEMA_MAPS) {
      const map = schema[key]
      if (map && typeof map === 'object') schema[key] = Object.fromEntries(Object.entries(map).map(([k, v]) => [k, clean(v)]))
    }
    for (const key of SCHEMA_LISTS) if (Array.isArray(schema[key])) schema[key] = schema[key].map(clean)
    for (const key of SCHEMA_ONE) if (schema[key] && typeof schema[key] === 'object') schema[key] = clean(schema[key])
    if (typeof schema.title !== 'string') return schema
    // A model: one component. A description belongs to a use (the error envelope's per status), and
    // the response object has it already.
    const { description: _, ...model } = schema
    const name = schema.title
    // Elysia adds `additionalProperties: false` to a schema object when a route first validates
    // with it, so two uses of one model can differ in that alone, depending on the requests served
    // so far. Compared without it; the stricter form is documented.
    const { additionalProperties: strict, ...shape } = model
    const json = JSON.stringify(shape)
    if (canonical.has(name) && canonical.get(name) !== json) throw new Error(`two different schemas are titled ${name}`)
    canonical.set(name, json)
    schemas[name] = strict === false || (schemas[name] as Obj | undefined)?.additionalProperties === false ? { ...model, additionalProperties: false } : model
    return { $ref: `#/components/schemas/${name}` }
  }

  function cleanContent(content: Obj | undefined) {
    for (const media of Object.values((content ?? {}) as Record<string, Obj>)) media.schema = clean(media.schema)
  }

  function paths(input: Obj): Obj {
    const out: Record<string, Obj> = {}
    for (const [path, item] of Object.entries(input as Record<string, Record<string, Obj>>)) {
      const key = path.length > 1 ? path.replace(/\/$/, '') : path
      out[key] = { ...out[key], ...item }
      for (const operation of Object.values(item)) {
        for (const parameter of (operation.parameters ?? []) as Obj[]) parameter.schema = clean(parameter.schema)
        cleanContent((operation.requestBody as Obj | undefined)?.content as Obj | undefined)
        for (const [status, response] of Object.entries((operation.responses ?? {}) as Record<string, Obj>)) {
          if (String(response.description).startsWith('Response for status') && SUCCESS[status]) response.description = SUCCESS[status]
          // The generator puts a void schema's `{ type: 'void' }` where the media types belong.
          if (typeof (response.content as Obj | undefined)?.type === 'string') delete response.content
          cleanContent(response.content as Obj | undefined)
        }
      }
    }
    return out
  }

  return { paths, schemas }
}
