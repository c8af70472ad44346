/**
 * fast-check generators for the fuzz suite (test/fuzz.test.ts): adversarial strings and values,
 * values derived from the routes' own typebox schemas (mostly valid, so the handlers run, with
 * mutations at every level), and the raw shapes a request can take (bodies, queries, headers).
 *
 * Values that depend on the database at the moment of the request (an existing id, a live refresh
 * token) are `Lazy`: fast-check generates the choice, `resolve` reads the world when it is sent.
 */
import { Kind, OptionalKind, type TSchema } from '@sinclair/typebox'
import fc from 'fast-check'

// ---- Lazy values ----

/** What a `Lazy` may read when the request is built; implemented by the test. */
export interface World {
  userIds(): Promise<string[]>
  enquiryIds(): Promise<string[]>
  /** Image ids, only those not soft-deleted when `live`. */
  imageIds(live: boolean): Promise<string[]>
  pageImageIds(page: string): Promise<string[]>
  variantPaths(): Promise<string[]>
  phones(): Promise<string[]>
  emails(): Promise<string[]>
  /** Tokens mailed in reset and invite links; only those not yet used or retired when `live`. */
  resetTokens(live: boolean): Promise<string[]>
  /** Phones of fixture admins whose password is the fixtures' one (unless a fuzzed request changed it). */
  loginPhones(): string[]
  refreshTokens(): { live: string[]; used: string[] }
  etags(): string[]
  selfId(role: 'superadmin' | 'admin'): string
  authHeader(kind: AuthKind): string | undefined
  file(name: string): Uint8Array
}

export class Lazy<T = unknown> {
  constructor(
    readonly label: string,
    readonly get: (world: World) => T | Promise<T>,
  ) {}
  [fc.toStringMethod](): string {
    return `<${this.label}>`
  }
}

/** `list[i]`, wrapping; `fallback` when the list is empty. */
export const pick = <T>(list: readonly T[], i: number, fallback: T): T => (list.length === 0 ? fallback : list[i % list.length]!)

/** Replaces every `Lazy` in a value (objects, arrays) by what it reads now. */
export async function resolve(value: unknown, world: World): Promise<unknown> {
  if (value instanceof Lazy) return resolve(await value.get(world), world)
  if (Array.isArray(value)) return Promise.all(value.map((v) => resolve(v, world)))
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value)) define(out, key, await resolve((value as Record<string, unknown>)[key], world))
    return out
  }
  return value
}

/** An own, enumerable property even for `__proto__`, so JSON.stringify sends it. */
export function define(target: Record<string, unknown>, key: string, value: unknown) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

// ---- Adversarial strings and values ----

const NASTY = [
  '',
  ' ',
  '   \t  ',
  '\u0000',
  'a\u0000b',
  'nul\u0000.jpg',
  '\ud800',
  '\udfff',
  'x\ud83d',
  '\ud83dx',
  '\u202eevil\u202c',
  '\u200f\u05e9\u05dc\u05d5\u05dd',
  'مرحبا بالعالم',
  '😀',
  '👩‍👩‍👧‍👦🏳️‍🌈',
  'e\u0301\u0301\u0301',
  '\ufeff',
  '\u200b\u200c\u200d',
  '\uffff\ufffe',
  'Ω≈ç√∫˜µ≤≥÷',
  "' OR '1'='1",
  "' OR 1=1 --",
  "1; DROP TABLE enquiries; --",
  "admin'--",
  '" OR ""="',
  "%' UNION SELECT password_hash FROM admin_users --",
  "'); DELETE FROM admin_users; --",
  '`; SELECT sqlite_version(); --',
  '1 AND SLEEP(5)',
  '\\',
  '\\\\\\"',
  '%',
  '%%',
  '_',
  '!%_',
  '../../etc/passwd',
  '..\\..\\windows\\win.ini',
  '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
  '....//....//etc/passwd',
  '/etc/passwd\u0000.jpg',
  'file:///etc/passwd',
  '${7*7}',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  '\r\nSet-Cookie: pwned=1',
  'line\nbreak',
  'null',
  'undefined',
  'true',
  'false',
  '0',
  '-1',
  '1e309',
  '-0',
  'NaN',
  'Infinity',
  '0x1F',
  '9999999999999999999999',
  '__proto__',
  'constructor',
  '[object Object]',
  'genesis',
  'hive',
  'GENESIS',
  'genesis ',
  'office',
  'new',
  'superadmin',
  '01ARZ3NDEKTSV4RRFFQ69G5FAV',
  '01arz3ndektsv4rrffq69g5fav',
  'not-an-email',
  'a@b',
  'a@b.c',
  '@example.com',
  'user@exa mple.com',
  '+44 20 7946 0000',
  '+4420794600000000000000',
  '2026-02-30',
  '2026-13-01T25:61:61Z',
  '1970-01-01',
  '9999-12-31T23:59:59.999999999+23:59',
]

const LONE_SURROGATE = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c))

/** Long strings at and past the limits (255, 500, 2000, 5000, the 100 kb body cap). */
const hugeString = fc
  .tuple(fc.constantFrom('a', 'é', '😀', ' ', '\u0000', '\ud800', '<'), fc.oneof(fc.integer({ min: 100, max: 5_200 }), fc.constantFrom(255, 256, 2001, 5001, 110_000)))
  .map(([c, n]) => c.repeat(n))

export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...NASTY) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 10 }), LONE_SURROGATE, fc.string({ maxLength: 10 })).map((p) => p.join('')) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...NASTY), fc.string({ unit: 'binary', maxLength: 10 })).map(([a, b]) => a + b) },
  { weight: 1, arbitrary: hugeString },
)

/** An object nested `n` levels deep (built without recursion). */
export function nested(n: number, leaf: unknown = 1): unknown {
  let value: unknown = leaf
  for (let i = 0; i < n; i++) value = i % 2 ? [value] : { a: value }
  return value
}

export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: nastyString },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: fc.constantFrom(1e308, -0, 2 ** 53 + 1, -1, 0, 1.5, Number.MAX_SAFE_INTEGER) },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constantFrom(null, [], {}, [null], { $ne: null }, { $gt: '' }, ['a', 'b']) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3000 }).map((n) => nested(n)) },
)

/** Object keys an attacker tries besides the schema's own. */
const extraKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '', 'id', 'role', 'status', 'isAdmin', 'passwordHash', 'password_hash', '$where', 'deleted_at', 'createdBy'),
  fc.string({ unit: 'binary', maxLength: 12 }),
)

// ---- Values from typebox schemas ----

/** Addresses of the everyday kind; fast-check's RFC-exotic ones (`!#$%&'*+/=?^_{|}~` local parts) are mostly refused. */
export const plainEmail = fc
  .tuple(fc.stringMatching(/^[a-z0-9]{1,12}(?:[._+-][a-z0-9]{1,8})?$/), fc.constantFrom('example.com', 'spaces.test', 'mail.co.uk', 'xn--bcher-kva.example'))
  .map(([local, domain]) => `${local}@${domain}`)

export type Hints = Record<string, fc.Arbitrary<unknown>>

type S = TSchema & Record<string, unknown>

const isOptional = (schema: TSchema) => (schema as S)[OptionalKind] === 'Optional'

function lengthIn(s: string, schema: S) {
  const min = (schema.minLength as number | undefined) ?? 0
  const max = (schema.maxLength as number | undefined) ?? Number.POSITIVE_INFINITY
  return s.length >= min && s.length <= max
}

function validString(schema: S): fc.Arbitrary<string> {
  const min = (schema.minLength as number | undefined) ?? 0
  const max = (schema.maxLength as number | undefined) ?? 200
  const upTo = Math.min(max, min + 40)
  const pattern = schema.pattern as string | undefined
  if (schema.format === 'email') return fc.oneof({ weight: 3, arbitrary: plainEmail }, { weight: 1, arbitrary: fc.emailAddress() }).filter((s) => lengthIn(s, schema))
  const charClass = pattern && /^\^\[(.*)\]\*\$$/.exec(pattern)
  if (charClass) {
    const char = fc.stringMatching(new RegExp(`^[${charClass[1]}]$`))
    return fc.array(char, { minLength: min, maxLength: upTo }).map((cs) => cs.join(''))
  }
  if (pattern === '\\S') {
    return fc.string({ unit: fc.oneof(fc.constant('x'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), minLength: Math.max(min, 1), maxLength: upTo }).filter((s) => /\S/.test(s) && lengthIn(s, schema))
  }
  if (pattern) return fc.stringMatching(new RegExp(pattern)).filter((s) => lengthIn(s, schema))
  return fc.string({ unit: fc.oneof({ weight: 3, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) }, { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) }), minLength: min, maxLength: upTo }).filter((s) => lengthIn(s, schema))
}

/** A value the schema accepts (within what generators can cheaply make). `hints` are preferred per property. */
export function validValue(schema: TSchema, hints: Hints = {}): fc.Arbitrary<unknown> {
  const s = schema as S
  switch (s[Kind]) {
    case 'String':
      return validString(s)
    case 'Integer':
      return fc.integer({ min: (s.minimum as number | undefined) ?? -1000, max: (s.maximum as number | undefined) ?? 1000 })
    case 'Number':
      return fc.double({ min: (s.minimum as number | undefined) ?? -1e6, max: (s.maximum as number | undefined) ?? 1e6, noNaN: true })
    case 'Boolean':
      return fc.boolean()
    case 'Literal':
      return fc.constant(s.const)
    case 'Null':
      return fc.constant(null)
    case 'Union':
      return fc.oneof(...(s.anyOf as TSchema[]).map((m) => validValue(m, hints)))
    case 'Array':
      return fc.array(validValue(s.items as TSchema, hints), { maxLength: Math.min((s.maxItems as number | undefined) ?? 5, 5) })
    case 'Object':
      return objectOf(s, (key, prop) => hints[key] ?? validValue(prop, hints), false)
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

/** Mostly a valid value, sometimes a wrong type, a boundary or an adversarial value, at every level. */
export function fuzzValue(schema: TSchema, hints: Hints = {}, key?: string, validWeight = 6): fc.Arbitrary<unknown> {
  const s = schema as S
  const hinted = key !== undefined ? hints[key] : undefined
  const valid = hinted ? fc.oneof({ weight: 6, arbitrary: hinted }, { weight: 1, arbitrary: validValue(schema) }) : validValue(schema, hints)
  const mutations: fc.Arbitrary<unknown>[] = [nastyValue]
  switch (s[Kind]) {
    case 'String': {
      const min = (s.minLength as number | undefined) ?? 0
      const max = s.maxLength as number | undefined
      mutations.push(nastyString, fc.constant('x'.repeat(Math.max(0, min - 1))))
      if (max !== undefined) mutations.push(fc.constantFrom('x'.repeat(max), 'x'.repeat(max + 1), '😀'.repeat(Math.ceil(max / 2) + 1), ` ${'y'.repeat(max)} `))
      break
    }
    case 'Integer':
    case 'Number':
      mutations.push(
        fc.constantFrom(((s.minimum as number | undefined) ?? 0) - 1, ((s.maximum as number | undefined) ?? 0) + 1, 1.5, '1', ' 2 ', '1e3', 'abc', -0, 1e308, 2 ** 31, 2 ** 53),
      )
      break
    case 'Boolean':
      mutations.push(fc.constantFrom('true', 'false', 1, 0, 'yes', null))
      break
    case 'Array':
      mutations.push(
        fc.array(nastyValue, { maxLength: 4 }),
        fc.integer({ min: 0, max: 20_000 }).map((n) => Array.from({ length: n }, (_, i) => `01ARZ3NDEKTSV4RRFFQ69G${String(i).padStart(4, '0')}`)),
      )
      break
    case 'Object':
      return fc.oneof({ weight: 8, arbitrary: fuzzObject(schema, hints) }, { weight: 1, arbitrary: nastyValue })
  }
  return fc.oneof({ weight: validWeight, arbitrary: valid }, { weight: 1, arbitrary: fc.oneof(...mutations) })
}

/**
 * An object for `schema`: its keys mostly present (required ones nearly always), plus stray keys.
 * The more keys, the rarer each one's mutation, so that about half the objects are valid throughout.
 */
export function fuzzObject(schema: TSchema, hints: Hints = {}): fc.Arbitrary<Record<string, unknown>> {
  const n = Object.keys(((schema as S).properties ?? {}) as object).length
  return objectOf(schema as S, (key, prop) => fuzzValue(prop, hints, key, Math.max(6, 3 * n)), true)
}

const ABSENT = Symbol('absent')

function objectOf(schema: S, value: (key: string, prop: TSchema) => fc.Arbitrary<unknown>, extras: boolean) {
  const props = (schema.properties ?? {}) as Record<string, TSchema>
  const keys = Object.keys(props)
  const entries = keys.map((key) => {
    const required = !isOptional(props[key]!)
    const present = value(key, props[key]!)
    return extras
      ? fc.oneof({ weight: required ? Math.max(14, 5 * keys.length) : 2, arbitrary: present }, { weight: 1, arbitrary: fc.constant(ABSENT) })
      : required
        ? present
        : fc.oneof(present, fc.constant(ABSENT))
  })
  const stray = extras ? fc.oneof({ weight: 6, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.tuple(extraKey, nastyValue), { minLength: 1, maxLength: 2 }) }) : fc.constant([])
  return fc.tuple(fc.tuple(...entries), stray).map(([values, more]) => {
    const out: Record<string, unknown> = {}
    keys.forEach((key, i) => values[i] !== ABSENT && define(out, key, values[i]))
    for (const [key, v] of more as [string, unknown][]) define(out, key, v)
    return out
  })
}

// ---- Request bodies ----

export type Part =
  | { name: string; value: string }
  | { name: string; file: Uint8Array | Lazy<Uint8Array>; filename: string; type: string }

export type Body =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown; type: string }
  | { kind: 'text'; text: string; type: string | null }
  | { kind: 'bytes'; bytes: Uint8Array | Lazy<Uint8Array>; type: string | null }
  | { kind: 'form'; parts: Part[]; type?: string }
  /** Sent chunked, without a Content-Length, in pieces of `chunk` bytes. */
  | { kind: 'stream'; text: string; type: string; chunk: number }

const JSON_TYPES = ['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/merge-patch+json', 'application/json;charset=latin1', 'application/json; boundary=x']
const WRONG_TYPES = [
  'text/plain',
  'text/html',
  'application/xml',
  'application/octet-stream',
  'image/png',
  'multipart/form-data',
  'multipart/form-data; boundary=nope',
  'multipart/mixed; boundary=x',
  'application/x-www-form-urlencoded',
  'application/jsonx',
  ';;;',
  '',
  'text/json',
]

export const jsonType = fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom(...JSON_TYPES) })

/** Bytes that are not UTF-8, or JSON in another encoding. */
const badBytes = fc.constantFrom(
  new Uint8Array([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]),
  new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]),
  new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
  new Uint8Array([0x7b, 0x00, 0x7d]),
  new Uint8Array([0xed, 0xa0, 0x80]),
  new Uint8Array([0xc0, 0xaf, 0xc0, 0xae]),
)

const malformedJson = fc.oneof(
  fc.constantFrom('', ' ', '{', '}', '{"a":', '{"a" 1}', "{'a':1}", '{a:1}', '{"a":1,}', '[1,2', 'nul', 'NaN', '{"a":NaN}', '{"a":1}garbage', '{"a":1}{"b":2}', '/* c */{}', '\ufeff{}', '{"a":"\\x41"}', '{"a":"\\ud800"}', '"\\u0000"', '{"\u0000":1}', '1e99999', '-', '{"__proto__":{"isAdmin":true}}', '{"constructor":{"prototype":{"polluted":1}}}'),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.constantFrom('null', 'true', '0', '"text"', '[]', '[{}]'),
)

/** JSON nested far deeper than any schema, as raw text (arrays or objects, up to the 100 kb cap). */
const deepJson = fc.tuple(fc.integer({ min: 100, max: 60_000 }), fc.boolean()).map(([n, arrays]) => (arrays ? '['.repeat(n) + ']'.repeat(n) : '{"a":'.repeat(Math.floor(n / 5)) + '1' + '}'.repeat(Math.floor(n / 5))))

/** The object's JSON with one of `keys` repeated (last one wins in JSON.parse, first one in some parsers). */
function duplicateKeys(object: fc.Arbitrary<Record<string, unknown>>, keys: string[]) {
  return fc.tuple(object, fc.constantFrom(...(keys.length ? keys : ['a'])), nastyValue, fc.boolean()).map(([o, key, v, before]) => {
    const text = JSON.stringify(o)
    const dup = `${JSON.stringify(key)}:${JSON.stringify(v) ?? 'null'}`
    if (text === '{}') return `{${dup},${dup}}`
    return before ? `{${dup},${text.slice(1)}` : `${text.slice(0, -1)},${dup}}`
  })
}

function urlencoded(object: Record<string, unknown>): string {
  const params = new URLSearchParams()
  for (const key of Object.keys(object)) {
    const v = object[key]
    params.append(key, typeof v === 'string' ? v : JSON.stringify(v) ?? '')
  }
  return params.toString()
}

const textPart = fc.record({ name: fc.oneof(fc.constantFrom('a', 'name', 'phone', 'body', 'status', 'file'), nastyString), value: nastyString })

/** Every way a JSON route's body can arrive; `schema` shapes the common, mostly valid case. */
export function jsonBody(schema: TSchema, hints: Hints = {}): fc.Arbitrary<Body> {
  const object = fuzzObject(schema, hints)
  const keys = Object.keys(((schema as S).properties ?? {}) as object)
  return fc.oneof(
    { weight: 30, arbitrary: fc.tuple(object, jsonType).map(([value, type]): Body => ({ kind: 'json', value, type })) },
    { weight: 3, arbitrary: fc.tuple(duplicateKeys(object, keys), jsonType).map(([text, type]): Body => ({ kind: 'text', text, type })) },
    { weight: 3, arbitrary: fc.tuple(malformedJson, jsonType).map(([text, type]): Body => ({ kind: 'text', text, type })) },
    { weight: 2, arbitrary: fc.tuple(nastyValue, jsonType).map(([value, type]): Body => ({ kind: 'json', value, type })) },
    { weight: 2, arbitrary: fc.tuple(object, fc.constantFrom(...WRONG_TYPES)).map(([value, type]): Body => ({ kind: 'text', text: JSON.stringify(value), type })) },
    { weight: 1, arbitrary: object.map((value): Body => ({ kind: 'text', text: urlencoded(value), type: 'application/x-www-form-urlencoded' })) },
    { weight: 1, arbitrary: fc.array(textPart, { maxLength: 4 }).map((parts): Body => ({ kind: 'form', parts })) },
    { weight: 1, arbitrary: fc.record({ text: fc.string({ unit: 'binary', maxLength: 80 }), type: fc.constantFrom('multipart/form-data; boundary=b', 'multipart/form-data; boundary=') }).map((b): Body => ({ kind: 'text', ...b })) },
    { weight: 2, arbitrary: fc.constant<Body>({ kind: 'none' }) },
    { weight: 1, arbitrary: fc.constantFrom<Body>({ kind: 'text', text: '', type: 'application/json' }, { kind: 'bytes', bytes: new Uint8Array(), type: null }) },
    { weight: 1, arbitrary: fc.tuple(deepJson, jsonType).map(([text, type]): Body => ({ kind: 'text', text, type })) },
    { weight: 1, arbitrary: fc.tuple(badBytes, jsonType).map(([bytes, type]): Body => ({ kind: 'bytes', bytes, type })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(object, fc.constantFrom(1, 7, 4096), fc.constantFrom(0, 0, 0, 120_000))
        .map(([value, chunk, pad]): Body => ({ kind: 'stream', text: JSON.stringify(value).replace(/^\{/, `{${pad ? `"pad":"${'p'.repeat(pad)}",` : ''}`), type: 'application/json', chunk: pad ? 4096 : chunk })),
    },
    { weight: 1, arbitrary: fc.tuple(object, fc.constant(null)).map(([value]): Body => ({ kind: 'bytes', bytes: new TextEncoder().encode(JSON.stringify(value)), type: null })) },
  )
}

/** A route that takes no body: mostly none, sometimes junk. */
export const anyBody: fc.Arbitrary<Body> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Body>({ kind: 'none' }) },
  { weight: 2, arbitrary: fc.tuple(nastyValue, jsonType).map(([value, type]): Body => ({ kind: 'json', value, type })) },
  { weight: 1, arbitrary: fc.tuple(malformedJson, fc.constantFrom(...JSON_TYPES, ...WRONG_TYPES)).map(([text, type]): Body => ({ kind: 'text', text, type })) },
  { weight: 1, arbitrary: fc.tuple(deepJson, jsonType).map(([text, type]): Body => ({ kind: 'text', text, type })) },
  { weight: 1, arbitrary: fc.array(textPart, { maxLength: 3 }).map((parts): Body => ({ kind: 'form', parts })) },
)

// ---- Queries, path segments, headers ----

/** `[key, value]` pairs for a query schema: values mostly valid (as text), keys sometimes repeated or stray. */
export function queryPairs(schema: TSchema | undefined, hints: Hints = {}): fc.Arbitrary<string> {
  const props = ((schema as S | undefined)?.properties ?? {}) as Record<string, TSchema>
  const asText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v) ?? '')
  const pairs = Object.keys(props).map((key) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant([] as [string, string][]) },
      { weight: 4, arbitrary: fuzzValue(props[key]!, hints, key).map((v): [string, string][] => [[key, asText(v)]]) },
      { weight: 1, arbitrary: fc.array(fuzzValue(props[key]!, hints, key), { minLength: 2, maxLength: 3 }).map((vs) => vs.map((v): [string, string] => [key, asText(v)])) },
    ),
  )
  const stray = fc.oneof({ weight: 5, arbitrary: fc.constant([] as [string, string][]) }, { weight: 1, arbitrary: fc.array(fc.tuple(fc.oneof(extraKey, fc.constantFrom('page[]', 'q[0]', 'a[b]')), nastyString), { maxLength: 2 }) })
  const encoded = fc.tuple(fc.tuple(...pairs), stray).map(([groups, more]) => {
    const params = new URLSearchParams()
    for (const [k, v] of [...groups.flat(), ...more]) params.append(k, v)
    return params.toString()
  })
  // Raw tails no encoder would produce: stray %, broken escapes, empty keys, repeated separators.
  const raw = fc.constantFrom('%', '%zz', '%ff', '%c3%28', '%00', '&&&', '=', '==', 'a=%', 'page=%2', '?', 'q=%ED%A0%80', 'perPage=1e2', 'page=0x10', 'page= 1', 'page=-0', 'q=\u00e9', 'sort=newest&sort=oldest')
  return fc.oneof({ weight: 8, arbitrary: encoded }, { weight: 1, arbitrary: fc.tuple(encoded, raw).map(([q, r]) => (q ? `${q}&${r}` : r)) }).map((q) => q.slice(0, 6000))
}

/** encodeURIComponent, except that a lone surrogate becomes its WTF-8 bytes (%ED%A0%80) instead of throwing. */
export function percentEncode(s: string): string {
  return Array.from(s, (ch) => {
    if (!/^[\ud800-\udfff]$/.test(ch)) return encodeURIComponent(ch)
    const c = ch.charCodeAt(0)
    return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('')
  }).join('')
}

/** A path segment: usually given by `existing`, else an unknown ULID or anything at all. */
export function pathId(existing?: fc.Arbitrary<Lazy<string> | string>): fc.Arbitrary<Lazy<string> | string> {
  const arbs: fc.WeightedArbitrary<Lazy<string> | string>[] = [
    { weight: 2, arbitrary: fc.ulid() },
    // Never empty: `/admin/users/` is another route (the list), fuzzed as such.
    { weight: 3, arbitrary: nastyString.filter((s) => s !== '').map((s) => percentEncode(s).slice(0, 3000)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('%ff', '%00', '%2e%2e', '..', '.', '%2F', '%2f..%2f..', ';', '%20', 'a%', '%u0041', '%c3%28', '%ED%A0%80', '~', '*', '%252e', 'order', 'categories', 'me', '01ARZ3NDEKTSV4RRFFQ69G5FAV%00'),
    },
  ]
  if (existing) arbs.push({ weight: 8, arbitrary: existing })
  return fc.oneof(...arbs)
}

/** Header values as the wire carries them: latin1 bytes (UTF-8 of the text), no control characters. */
export const headerValue = nastyString.map((s) =>
  Buffer.from(s, 'utf8')
    .toString('latin1')
    // Control characters other than tab are refused by Bun's HTTP parser (400, no body) before
    // the app sees the request: nothing the service can answer, so not sent.
    .replace(/[\x00-\x08\x0a-\x1f\x7f]/g, '')
    .trim()
    .slice(0, 2000),
)

export type AuthKind =
  | 'superadmin'
  | 'admin'
  | 'none'
  | 'expired'
  | 'wrong-secret'
  | 'refresh-secret'
  | 'alg-none'
  | 'no-exp'
  | 'hs512'
  | 'unknown-user'
  | 'escalated-role'
  | 'tampered'
  | 'lowercase-scheme'
  | 'basic'
  | 'empty-bearer'
  | 'garbage'
  | 'huge'

const BAD_AUTH: AuthKind[] = ['none', 'expired', 'wrong-secret', 'refresh-secret', 'alg-none', 'no-exp', 'hs512', 'unknown-user', 'escalated-role', 'tampered', 'lowercase-scheme', 'basic', 'empty-bearer', 'garbage', 'huge']

/** Mostly the valid token of `role`, else none or one of the ways a token is wrong. */
export function authKind(role: 'superadmin' | 'admin' | 'public'): fc.Arbitrary<AuthKind> {
  if (role === 'public') return fc.oneof({ weight: 6, arbitrary: fc.constant<AuthKind>('none') }, { weight: 1, arbitrary: fc.constantFrom<AuthKind>('superadmin', 'admin', 'garbage', 'expired') })
  const valid: fc.Arbitrary<AuthKind> = role === 'superadmin' ? fc.oneof({ weight: 5, arbitrary: fc.constant<AuthKind>('superadmin') }, { weight: 1, arbitrary: fc.constant<AuthKind>('admin') }) : fc.constantFrom<AuthKind>('admin', 'superadmin')
  return fc.oneof({ weight: 8, arbitrary: valid }, { weight: 2, arbitrary: fc.constantFrom(...BAD_AUTH) })
}

export const ORIGINS = ['https://site.test', 'http://localhost:4321', 'https://admin.test', 'https://evil.test', 'null', 'https://admin.test.evil.test', 'HTTPS://ADMIN.TEST', 'https://admin.test/', '*']

/** Client addresses: fresh ones (so rate limits seldom bite), one shared one (so they do), junk. */
export const forwardedFor: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 10, arbitrary: fc.oneof(fc.ipV4(), fc.ipV6()) },
  { weight: 2, arbitrary: fc.constant('203.0.113.7') },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.constantFrom('unknown', '999.1.1.1', '1.2.3.4, 5.6.7.8', '::ffff:198.51.100.9', ', , ,', '127.0.0.1', '127.0.0.1, 127.0.0.1', 'fe80::1%eth0', '[::1]:80', '1.2.3.4:5678'),
      headerValue,
      fc.array(fc.ipV4(), { minLength: 2, maxLength: 60 }).map((ips) => ips.join(', ')),
    ),
  },
)

/** Optional headers any request may carry. */
export const extraHeaders: fc.Arbitrary<Record<string, string>> = fc
  .record(
    {
      origin: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ORIGINS) }, { weight: 1, arbitrary: headerValue }),
      cookie: fc.oneof(
        fc.constantFrom('svc_admin_refresh=', 'svc_admin_refresh', 'svc_admin_refresh=a; svc_admin_refresh=b', ';;;', '=', 'a=b; svc_admin_refresh=%00'),
        headerValue.map((v) => `svc_admin_refresh=${v}`),
      ),
      'user-agent': headerValue,
      referer: headerValue,
      accept: fc.constantFrom('*/*', 'text/html', 'application/xml', 'image/avif', ''),
      'accept-encoding': fc.constantFrom('gzip', 'br', 'identity', 'gzip;q=0, *;q=0', 'x'),
      'if-none-match': fc.oneof(fc.constantFrom('*', 'W/"x"', '""', '"abc", *'), headerValue),
      'x-request-id': headerValue,
      random: fc.dictionary(fc.stringMatching(/^x-[a-z0-9-]{1,16}$/), headerValue, { maxKeys: 2 }),
    },
    { requiredKeys: [] },
  )
  .map(({ random, ...named }) => {
    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries({ ...(random ?? {}), ...named })) if (v !== undefined) out[k] = v as string
    return out
  })
