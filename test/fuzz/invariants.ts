/**
 * What every fuzzed response must satisfy (test/fuzz.test.ts), and the database snapshots that show
 * a rejected write changed nothing.
 */
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import sql, { raw } from 'sql-template-tag'
import type { Db, Row } from '../../src/db/db.ts'

export interface Expectation {
  /** Statuses the contract allows for this route; anything else is a violation (5xx always is). */
  allowed: readonly number[]
  /** POST /enquiries: `{ ok: false, error, fields? }` / `{ ok: true, id }` instead of `{ error, requestId }`. */
  okEnvelope?: boolean
  /** Body schema per success status. */
  success?: Partial<Record<number, TSchema>>
  /** The static file route: a 200 is image bytes, not JSON. */
  file?: boolean
}

export interface Sent {
  method: string
  /** Every text the request carried (path, query, headers, body), to tell an echo from a leak. */
  text: string
  origin: string | null
  corsOrigins: readonly string[] | undefined
}

/** Internals that never belong in a response, whatever the input. */
const INTERNALS = [
  /\bat \S+ \(?[^\s)]*\.(?:ts|js):\d+/g,
  /\.(?:ts|js):\d+:\d+/g,
  /SQLITE_[A-Z]+/g,
  /\bER_[A-Z_]{3,}/g,
  /constraint failed/gi,
  /Duplicate entry/gi,
  /no such (?:table|column)/gi,
  /syntax error/gi,
  /node_modules/g,
  /\b(?:TypeError|RangeError|ReferenceError|SyntaxError|URIError)\b/g,
  /JSON Parse error/gi,
  /Maximum call stack/gi,
  /password_hash|token_hash|\$argon2/g,
]

/** Remembers internals-looking text a request carried: echoed back later, it is data, not a leak. */
export function noteSent(text: string, seen: Set<string>) {
  for (const pattern of INTERNALS) for (const match of text.matchAll(pattern)) seen.add(match[0])
}

/** SQL or driver text: allowed in an error body only as an echo of what the request itself sent. */
const SQL_TEXT = /SELECT |INSERT |UPDATE |DELETE FROM|sqlite|mysql|\bER_/gi

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * The problems of one response. `seen` collects internals-looking text the fuzzer itself has sent,
 * so data echoed back from the database later is not mistaken for a leak.
 */
export function responseProblems(expect: Expectation, sent: Sent, res: Response, bytes: Uint8Array, seen: Set<string>, secrets: readonly string[]): string[] {
  const problems: string[] = []
  const { status } = res
  if (status >= 500) problems.push(`server error ${status}`)
  else if (!expect.allowed.includes(status)) problems.push(`status ${status} is not one of ${expect.allowed.join(', ')}`)
  if (!res.headers.get('x-request-id')) problems.push('no X-Request-Id header')
  if (res.headers.get('x-content-type-options') !== 'nosniff') problems.push('no X-Content-Type-Options: nosniff')
  const allowOrigin = res.headers.get('access-control-allow-origin')
  if (allowOrigin !== null && (allowOrigin !== sent.origin || !sent.corsOrigins?.includes(allowOrigin))) {
    problems.push(`Access-Control-Allow-Origin ${JSON.stringify(allowOrigin)} for origin ${JSON.stringify(sent.origin)}`)
  }

  const text = new TextDecoder().decode(bytes)
  for (const secret of secrets) if (text.includes(secret)) problems.push('the body carries a server-side secret or path')
  for (const pattern of INTERNALS) {
    for (const [match] of text.matchAll(pattern)) {
      if (!seen.has(match) && !sent.text.includes(match)) problems.push(`internals in the body: ${JSON.stringify(match)}`)
    }
  }
  if (status >= 400) {
    const lowerSent = sent.text.toLowerCase()
    for (const match of text.matchAll(SQL_TEXT)) {
      if (!lowerSent.includes(match[0].toLowerCase())) problems.push(`SQL text in an error body: ${JSON.stringify(match[0])}`)
    }
  }

  if (sent.method === 'HEAD' || status === 204 || status === 304) {
    if (bytes.length > 0) problems.push(`a ${sent.method === 'HEAD' ? 'HEAD response' : status} has a body`)
    return problems
  }
  if (expect.file && status === 200) {
    if (!/^image\/(avif|webp|jpeg)$/.test(res.headers.get('content-type') ?? '')) problems.push(`a served file of type ${res.headers.get('content-type')}`)
    return problems
  }
  if (!/^application\/json\b/.test(res.headers.get('content-type') ?? '')) problems.push(`content-type ${res.headers.get('content-type')}`)
  let body: unknown
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    problems.push('the body is not JSON')
    return problems
  }
  if (!isPlainObject(body)) {
    problems.push('the body is not a JSON object')
    return problems
  }
  if (status >= 400) problems.push(...errorEnvelopeProblems(expect, status, body, res.headers.get('x-request-id')))
  else if (expect.okEnvelope) {
    if (body.ok !== true || typeof body.id !== 'string' || !ULID.test(body.id) || Object.keys(body).length !== 2) problems.push('success is not { ok: true, id }')
  } else {
    const schema = expect.success?.[status]
    if (schema && !Value.Check(schema, body)) {
      const first = [...Value.Errors(schema, body)][0]
      problems.push(`the ${status} body does not match its schema (${first?.path}: ${first?.message})`)
    }
  }
  return problems
}

function errorEnvelopeProblems(expect: Expectation, status: number, body: Record<string, unknown>, requestId: string | null): string[] {
  const problems: string[] = []
  const allowedKeys = expect.okEnvelope ? ['ok', 'error', 'fields'] : ['error', 'requestId', 'fields']
  const stray = Object.keys(body).filter((k) => !allowedKeys.includes(k))
  if (stray.length > 0) problems.push(`stray keys in the error envelope: ${stray.join(', ')}`)
  if (typeof body.error !== 'string' || body.error.trim() === '') problems.push('no error message')
  if (expect.okEnvelope) {
    if (body.ok !== false) problems.push('an error without ok: false')
    if (status === 422 && !isPlainObject(body.fields)) problems.push('a 422 without fields')
  } else if (body.requestId !== requestId) problems.push('requestId differs from X-Request-Id')
  if (body.fields !== undefined) {
    if (!isPlainObject(body.fields)) problems.push('fields is not an object')
    else if (Object.values(body.fields).some((v) => typeof v !== 'string')) problems.push('a fields entry is not a string')
  }
  return problems
}

// ---- Database snapshots ----

export const TABLES = ['admin_users', 'refresh_tokens', 'auth_tokens', 'media_categories', 'media_images', 'media_variants', 'enquiries', 'enquiry_replies'] as const
export type Table = (typeof TABLES)[number]

/** Per table: rows by id (tables given in full) or a fingerprint (COUNT(*) and the latest timestamp). */
export type Snapshot = Map<Table, Map<string, Row> | string>

const STAMP: Record<Table, string> = {
  admin_users: 'MAX(updated_at)',
  refresh_tokens: 'MAX(created_at)',
  auth_tokens: 'MAX(created_at)',
  media_categories: 'MAX(id)',
  media_images: 'MAX(updated_at)',
  media_variants: 'MAX(id)',
  enquiries: 'MAX(updated_at)',
  enquiry_replies: 'MAX(created_at)',
}

const plain = (v: unknown) => (v instanceof Date ? v.toISOString() : typeof v === 'bigint' ? String(v) : Buffer.isBuffer(v) ? v.toString('hex') : v)

export async function snapshot(db: Db, full: readonly Table[]): Promise<Snapshot> {
  const out: Snapshot = new Map()
  for (const table of TABLES) {
    if (full.includes(table)) {
      const rows = new Map<string, Row>()
      for (const row of await db.query(sql`SELECT * FROM ${raw(table)}`)) {
        const clean: Row = {}
        for (const [k, v] of Object.entries(row)) clean[k] = plain(v)
        rows.set(String(clean.id), clean)
      }
      out.set(table, rows)
    } else {
      const row = await db.one(sql`SELECT COUNT(*) AS n, ${raw(STAMP[table])} AS stamp FROM ${raw(table)}`)
      out.set(table, `${row?.n}|${plain(row?.stamp)}`)
    }
  }
  return out
}

/** What a rejected request may still write, because the contract says so. */
export interface Allowance {
  /** Columns that may change in place (e.g. a failed login counts on the user's row). */
  columns?: Partial<Record<Table, string[]>>
  /** Rows that may appear, each of which must satisfy `row` (e.g. the 429 enquiry stored as spam). */
  inserts?: { table: Table; max: number; row: (r: Row) => boolean }
}

export function snapshotDiff(before: Snapshot, after: Snapshot, allowance: Allowance = {}): string[] {
  const problems: string[] = []
  for (const table of TABLES) {
    const a = before.get(table)
    const b = after.get(table)
    if (typeof a === 'string' || typeof b === 'string') {
      if (a !== b) problems.push(`${table} changed (count|latest ${a} -> ${b})`)
      continue
    }
    const ignored = new Set(allowance.columns?.[table] ?? [])
    const inserts = allowance.inserts?.table === table ? allowance.inserts : undefined
    let added = 0
    for (const [id, row] of b!) {
      const old = a!.get(id)
      if (!old) {
        added++
        if (!inserts || !inserts.row(row)) problems.push(`${table}: row ${id} inserted`)
        continue
      }
      const changed = Object.keys(row).filter((k) => !ignored.has(k) && JSON.stringify(row[k]) !== JSON.stringify(old[k]))
      if (changed.length > 0) problems.push(`${table}: row ${id} changed (${changed.join(', ')})`)
    }
    if (inserts && added > inserts.max) problems.push(`${table}: ${added} rows inserted, at most ${inserts.max} allowed`)
    for (const id of a!.keys()) if (!b!.has(id)) problems.push(`${table}: row ${id} deleted`)
  }
  return problems
}
