import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { Elysia, ValidationError } from 'elysia'
import { log } from '../lib/log.ts'
import { requestIdOf } from './request.ts'

export type Fields = Record<string, string>

/** The closed set of errors a handler may throw; each knows its status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fields?: Fields,
    readonly headers?: Record<string, string>,
  ) {
    super(message)
  }
}
export class BadRequest extends HttpError {
  constructor(message = 'Bad request', fields?: Fields) {
    super(400, message, fields)
  }
}
export class Unauthorized extends HttpError {
  constructor(message = 'Unauthorized') {
    super(401, message)
  }
}
export class Forbidden extends HttpError {
  constructor(message = 'Forbidden') {
    super(403, message)
  }
}
export class NotFound extends HttpError {
  constructor(message = 'Not found') {
    super(404, message)
  }
}
export class RequestTimeout extends HttpError {
  constructor(message = 'The request body took too long to arrive') {
    super(408, message)
  }
}
export class PayloadTooLarge extends HttpError {
  constructor(message = 'Request body too large') {
    super(413, message)
  }
}
export class Unprocessable extends HttpError {
  constructor(message: string, fields?: Fields) {
    super(422, message, fields)
  }
}
export class TooManyRequests extends HttpError {
  constructor(message: string, retryAfterSec: number) {
    super(429, message, undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSec))) })
  }
}
export class ServiceUnavailable extends HttpError {
  constructor(message = 'Service unavailable', retryAfterSec?: number) {
    super(503, message, undefined, retryAfterSec === undefined ? undefined : { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSec))) })
  }
}

/**
 * Routes whose error bodies use the ok-discriminated envelope `{ ok: false, error, fields? }`
 * (decision 5); their schema failures are 422, not 400. Keyed by method and path because body parse
 * errors happen before any route hook could mark the request.
 */
const OK_ENVELOPE = new Set(['POST /enquiries'])

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  408: 'Request timeout',
  413: 'Request body too large',
  415: 'Unsupported media type',
  422: 'Unprocessable request',
  429: 'Too many requests',
  503: 'Service unavailable',
}

interface Formatted {
  status: number
  error: string
  fields?: Fields
  headers?: Record<string, string>
}

function classify(code: unknown, error: unknown, request: Request, route?: string): Formatted {
  // Elysia wraps whatever a body parser throws in its own ParseError; ours carry the real status.
  const cause = (error as { cause?: unknown } | null)?.cause
  if (code === 'PARSE' && cause instanceof HttpError) error = cause
  if (error instanceof HttpError) {
    return { status: error.status, error: error.message, fields: error.fields, headers: error.headers }
  }
  if (error instanceof ValidationError || code === 'VALIDATION') {
    return { status: 400, error: 'Invalid request', fields: validationFields(error as ValidationError, request, route) }
  }
  if (databaseUnavailable(error)) {
    return { status: 503, error: 'The service is briefly unavailable; try again shortly', headers: { 'Retry-After': '5' } }
  }
  if (code === 'NOT_FOUND') return { status: 404, error: 'Not found' }
  if (code === 'PARSE') return { status: 400, error: 'Malformed request body' }
  if (code === 'INVALID_COOKIE_SIGNATURE') return { status: 400, error: 'Invalid cookie' }
  if (code === 'INVALID_FILE_TYPE') return { status: 422, error: 'Unsupported file type' }
  // Elysia's own status errors (e.g. a thrown `status(405)`) carry a numeric status.
  const status = (error as { status?: unknown } | null)?.status
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { status, error: STATUS_TEXT[status] ?? 'Request failed' }
  }
  return { status: 500, error: 'Internal server error' }
}

// The database cannot be reached or dropped the connection: a 503 the client may retry, not a 500.
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND',
  'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ER_CON_COUNT_ERROR', 'ER_SERVER_SHUTDOWN',
  'SQLITE_BUSY',
])

function databaseUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; fatal?: unknown; message?: unknown } | null
  if (!e) return false
  if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true
  return typeof e.message === 'string' && /Pool is closed|Connection lost|Can't add new command when connection is in closed state/.test(e.message)
}

/** Turns typebox errors into `{ property: message }`, keyed by the offending property's path. */
export function validationFields(error: ValidationError, request?: Request, route?: string): Fields {
  const fields: Fields = {}
  let all: { path: string; message: string; summary?: string; schema?: unknown; value?: unknown }[] = []
  try {
    all = error.all
  } catch {}
  for (const e of all) {
    const keys = e.path ? [e.path.replace(/^\//, '').replaceAll('/', '.')] : (request && coercedQueryKeys(request, route, e)) || [error.type]
    for (const key of keys) fields[key] ??= e.summary ?? e.message
  }
  if (Object.keys(fields).length === 0) fields[error.type || 'body'] = 'Invalid value'
  return fields
}

/**
 * The fields of `input` that `schema` refuses, keyed by top-level property; for checks made by hand
 * after a route has prepared its input (trimmed, defaulted), where Elysia's validation cannot run.
 */
export function schemaProblems(schema: TSchema, input: unknown, message: (key: string, error: { message: string; schema: unknown }) => string): Fields {
  const fields: Fields = {}
  for (const error of Value.Errors(schema, input)) {
    const key = error.path.split('/')[1] || 'body'
    fields[key] ??= message(key, error)
  }
  return fields
}

/** The properties of each route's query schema that take numbers, by `METHOD route` (learnQuerySchemas). */
const numericQueryKeys = new Map<string, Set<string>>()

/** Tells the formatter which query parameters of each route are numbers; the app calls it once built. */
export function learnQuerySchemas(routes: readonly { method: string; path: string; hooks?: { query?: unknown } }[]): void {
  for (const route of routes) {
    const properties = (route.hooks?.query as { properties?: Record<string, unknown> } | undefined)?.properties
    if (!properties) continue
    const numeric = Object.entries(properties).filter(([, schema]) => /"type":"(integer|number)"/.test(JSON.stringify(schema)))
    numericQueryKeys.set(`${route.method} ${route.path}`, new Set(numeric.map(([key]) => key)))
  }
}

/**
 * Elysia checks a coerced query number (`perPage=0`) on its own and loses its name: the error has
 * an empty path and type `property` (elysiajs/elysia#1822). The route's numeric query parameters
 * whose number fails that same schema are the offending ones; a text parameter with the same
 * digits (`q=0`) is not one of them.
 */
function coercedQueryKeys(request: Request, route: string | undefined, e: { schema?: unknown; value?: unknown }): string[] | undefined {
  if (typeof e.value !== 'number' || typeof e.schema !== 'object' || e.schema === null) return undefined
  const numeric = numericQueryKeys.get(`${request.method} ${route}`)
  const keys: string[] = []
  for (const [key, raw] of new URL(request.url).searchParams) {
    if (numeric && !numeric.has(key)) continue
    const n = Number(raw)
    if (raw.trim() !== '' && Object.is(n, e.value) && !Value.Check(e.schema as TSchema, n)) keys.push(key)
  }
  return keys.length > 0 ? keys : undefined
}

/** ONE formatter for every error of every route: the spec's envelope, never HTML or a stack. */
export const errorFormatter = new Elysia({ name: 'http.errors' }).onError({ as: 'global' }, ({ code, error, request, set, path, route }) => {
  const formatted = classify(code, error, request, route)
  const requestId = requestIdOf(request)
  if (formatted.status >= 500) {
    log.error({ requestId, method: request.method, path, err: error }, 'unhandled error')
  }
  const okEnvelope = OK_ENVELOPE.has(`${request.method} ${path}`)
  if (okEnvelope && formatted.status === 400 && (error instanceof ValidationError || code === 'VALIDATION')) {
    formatted.status = 422
    formatted.error = 'Please check the highlighted fields'
  }
  set.status = formatted.status
  Object.assign(set.headers, formatted.headers ?? {})
  set.headers['content-type'] = 'application/json; charset=utf-8'
  const body = okEnvelope
    ? { ok: false as const, error: formatted.error, ...(formatted.fields ? { fields: formatted.fields } : {}) }
    : { error: formatted.error, requestId, ...(formatted.fields ? { fields: formatted.fields } : {}) }
  return body
})

/** A server-side failure whose message is safe and useful to show (e.g. the disk is full). */
export class ServerFailure extends HttpError {
  constructor(status: 500 | 503 | 507, message: string) {
    super(status, message)
  }
}
