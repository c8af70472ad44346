/**
 * Every route of the app as the fuzzer sees it: how its path id, query, body and headers are made
 * (from the route's own schemas, with hints that steer values towards what exists, so the handlers
 * run and not only the validation), which statuses the contract allows, what it may write.
 */
import fc from 'fast-check'
import { t, type TSchema } from 'elysia'
import { ForgotBody, LoginBody, MeResponse, Ok, ResetBody, SessionResponse } from '../../src/features/auth/model.ts'
import { EnquiryDetail, EnquiryListItem, InboxQuery, ReplyBody, SOURCES, STATUSES, StatusBody, Submission } from '../../src/features/enquiries/model.ts'
import { GalleryQuery, SpaceGallery } from '../../src/features/gallery/model.ts'
import { Health } from '../../src/features/health/model.ts'
import { Category, ListQuery as MediaQuery, MediaImage, OrderBody, UpdateBody, UploadFields, VisibilityBody } from '../../src/features/media/model.ts'
import { CreateUserBody, ListQuery as UserQuery, PasswordBody, UpdateUserBody, User } from '../../src/features/users/model.ts'
import { Meta } from '../../src/http/schemas.ts'
import {
  anyBody,
  authKind,
  extraHeaders,
  forwardedFor,
  fuzzValue,
  headerValue,
  jsonBody,
  jsonType,
  Lazy,
  nastyString,
  ORIGINS,
  pathId,
  pick,
  plainEmail,
  queryPairs,
  type AuthKind,
  type Body,
  type Part,
  type World,
} from './arbitraries.ts'
import { PASSWORD } from '../factories.ts'
import type { Allowance, Expectation, Table } from './invariants.ts'

export { PASSWORD }
export const CATEGORIES = ['office', 'function-hall', 'sharing-corner', 'event-space', 'meeting-room']
const PAGES = ['genesis', 'hive']

export interface Route {
  name: string
  method: string
  path: (id: string) => string
  /** `public`: no token needed; `any`: any signed-in admin; `superadmin`: user management. */
  auth: 'public' | 'any' | 'superadmin'
  id?: fc.Arbitrary<Lazy<string> | string>
  query?: fc.Arbitrary<string>
  body?: fc.Arbitrary<Body>
  headers?: fc.Arbitrary<Record<string, string | Lazy<string | undefined>>>
  expect: Expectation
  /** Tables compared row by row around a rejected request (the others by count and latest stamp). */
  tables?: Table[]
  /** What a rejected request of this route may still write, by status. */
  allowance?: (status: number) => Allowance | undefined
}

export interface FuzzRequest {
  route: string
  auth: AuthKind
  id: Lazy<string> | string
  query: string
  body: Body
  headers: Record<string, string | Lazy<string | undefined>>
  xff: string | undefined
}

// ---- Hints: values that exist, or nearly ----

const lazyPick = (label: string, list: (w: World) => Promise<string[]>, fallback: string) =>
  fc.nat().map((i) => new Lazy(label, async (w) => pick(await list(w), i, fallback)))

const userId = lazyPick('user id', (w) => w.userIds(), '01ARZ3NDEKTSV4RRFFQ69G5FAV')
const selfId = (role: 'superadmin' | 'admin') => fc.constant(new Lazy(`own id (${role})`, (w) => w.selfId(role)))
const enquiryId = lazyPick('enquiry id', (w) => w.enquiryIds(), '01ARZ3NDEKTSV4RRFFQ69G5FAV')
const imageId = fc.oneof(
  { weight: 5, arbitrary: lazyPick('live image id', (w) => w.imageIds(true), '01ARZ3NDEKTSV4RRFFQ69G5FAV') },
  { weight: 1, arbitrary: lazyPick('image id (maybe deleted)', (w) => w.imageIds(false), '01ARZ3NDEKTSV4RRFFQ69G5FAV') },
)

/** Fresh phones come from a block no fixture uses (0161 496 0xxx, reserved for drama). */
const freshPhone = fc.integer({ min: 0, max: 999 }).map((n) => `+44 161 496 0${String(n).padStart(3, '0')}`)
const knownPhone = lazyPick('known phone', (w) => w.phones(), '+441614960000')
const phone = fc.oneof(
  { weight: 3, arbitrary: freshPhone },
  { weight: 2, arbitrary: knownPhone },
  { weight: 1, arbitrary: fc.constantFrom('02079460000', '+1 202 555 0143', '+999 123', 'tel:+441614960001', '+44 (0) 161 496 0002', '٠٧٩٤٦٠٠٠٠', '+44 161 496 0003 ext. 5') },
)
const knownEmail = fc.tuple(fc.nat(), fc.constantFrom('same', 'upper', 'padded')).map(
  ([i, how]) =>
    new Lazy(`known e-mail (${how})`, async (w) => {
      const email = pick(await w.emails(), i, 'nobody@spaces.test')
      return how === 'upper' ? email.toUpperCase() : how === 'padded' ? ` ${email} ` : email
    }),
)
const newEmail = fc.oneof({ weight: 4, arbitrary: plainEmail }, { weight: 1, arbitrary: fc.emailAddress().filter((e) => e.length <= 254) })
const email = fc.oneof({ weight: 3, arbitrary: newEmail }, { weight: 2, arbitrary: knownEmail })
const strongPassword = fc
  .tuple(fc.constantFrom('violet tundra mango', 'quiet harbour lantern', 'ßpäce ünïcode wörds', '雪の日の静かな図書館で本を読む', 'emoji 🚀 rocket launch'), fc.nat(9999))
  .map(([words, n]) => `${words} ${n} kestrel`)
const weakPassword = fc.constantFrom('', 'short', 'password', 'passwordpassword', '123456789012345', 'qwertyuiopasdfgh', '🙂'.repeat(14), 'x'.repeat(129), ' '.repeat(20), '+441614960001 pad pad')
const password = fc.oneof({ weight: 2, arbitrary: strongPassword }, { weight: 2, arbitrary: weakPassword }, { weight: 1, arbitrary: nastyString })
const slug = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...CATEGORIES) }, { weight: 1, arbitrary: fc.constantFrom('unknown', 'OFFICE', ' office ', 'office%', 'office\u0000') })
const plainDate = fc
  .tuple(fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2031-01-01T00:00:00Z'), noInvalidDate: true }), fc.constantFrom('date', 'iso', 'zone'))
  .map(([d, how]) => (how === 'date' ? d.toISOString().slice(0, 10) : how === 'iso' ? d.toISOString() : d.toISOString().replace('Z', '+05:30')))

/** Dates for `from`/`to`, and a few at the edges of the calendar and of the pattern. */
const date = fc.oneof(
  { weight: 6, arbitrary: plainDate },
  { weight: 1, arbitrary: fc.constantFrom('0000-01-01', '9999-12-31', '9999-12-31T23:59:59.999999999-23:59', '0000-01-01T00:00:00+23:59', '2024-02-29', '2023-02-29', '1970-01-01T00:00:00Z') },
)

const enquiryHints = {
  name: fc.constantFrom('Ada Lovelace', 'Zoë Ñúñez', '李小龙', 'محمد علي', "O'Brien; DROP TABLE enquiries", 'Jo'),
  phone: fc.stringMatching(/^\+?[0-9][0-9 ()-]{6,18}$/),
  email: newEmail,
  message: fc.lorem({ maxCount: 30 }).map((s) => `Hello there, ${s}`),
  source: fc.constantFrom(...SOURCES),
  website: fc.oneof({ weight: 8, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constant('http://spam.example') }),
  token: fc.constant(''),
}

// ---- Cookies of the refresh routes ----

const refreshCookie = fc.oneof(
  { weight: 4, arbitrary: fc.nat().map((i) => new Lazy('live refresh token', (w) => cookieOf(pick(w.refreshTokens().live, i, '')))) },
  { weight: 2, arbitrary: fc.nat().map((i) => new Lazy('rotated refresh token', (w) => cookieOf(pick(w.refreshTokens().used, i, '')))) },
  { weight: 2, arbitrary: headerValue.map((v) => `svc_admin_refresh=${v}`) },
  { weight: 1, arbitrary: fc.constant(undefined) },
)
const cookieOf = (token: string) => (token ? `svc_admin_refresh=${token}` : undefined)
const cookieHeaders = fc.record({
  cookie: refreshCookie,
  origin: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: fc.constant('https://admin.test') }, { weight: 1, arbitrary: fc.constantFrom(...ORIGINS) }),
}).map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string | Lazy<string | undefined>>)

// ---- Uploads ----

export const GOOD_FILES = ['jpeg', 'png', 'webp', 'gif', 'tiff', 'avif', 'avifAsHeif', 'jpegWithPayload']
export const BAD_FILES = ['svg', 'pdf', 'text', 'elf', 'truncatedJpeg', 'gifJpegPolyglot', 'pngSvgPolyglot', 'heic', 'jpegHeader', 'pngHeader']
const fileOf = (name: string) => new Lazy(`file ${name}`, (w) => w.file(name))
const uploadFile = fc.oneof(
  { weight: 9, arbitrary: fc.constantFrom(...GOOD_FILES).map(fileOf) },
  { weight: 3, arbitrary: fc.constantFrom(...BAD_FILES).map(fileOf) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 4096 }) },
  { weight: 1, arbitrary: fc.constant(new Uint8Array()) },
)
const filename = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('photo.jpg', 'photo.png', 'IMG_0001.HEIC') },
  { weight: 1, arbitrary: fc.constantFrom('../../etc/passwd', '..\\..\\boot.ini', 'a\u0000.jpg', 'a"b.jpg', 'x'.repeat(400) + '.jpg', '', '.htaccess', 'CON', '😀.jpg', 'a\r\nb.jpg') },
  { weight: 1, arbitrary: nastyString },
)
const fileType = fc.constantFrom('image/jpeg', 'image/png', 'application/octet-stream', 'image/svg+xml', 'text/html', '')
const asText = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))
const F = UploadFields.properties
const optionalField = (schema: TSchema, hints = {}, key?: string) => fc.option(fuzzValue(schema, hints, key), { nil: undefined, freq: 2 })
const textPart = fc.record({ name: fc.oneof(fc.constantFrom('file', 'page', 'alt', 'caption', 'category', 'file[]', 'FILE', '__proto__', ''), nastyString), value: nastyString })

/** The common case: the documented parts, each mostly valid, in any order, sometimes doubled or missing. */
const uploadForm = fc
  .record({
    file: fc.option(fc.record({ bytes: uploadFile, filename, type: fileType }), { nil: undefined, freq: 12 }),
    page: fc.option(fuzzValue(F.page, {}, undefined, 12), { nil: undefined, freq: 12 }),
    alt: fc.option(fuzzValue(F.alt, {}, undefined, 12), { nil: undefined, freq: 12 }),
    caption: optionalField(F.caption),
    category: optionalField(F.category, { category: slug }, 'category'),
    fileAsText: fc.boolean(),
    twice: fc.constantFrom(false, false, false, false, false, false, 'file', 'page'),
    extra: fc.array(textPart, { maxLength: 2 }),
  })
  .map(({ file, page, alt, caption, category, fileAsText, twice, extra }): Body => {
    const parts: Part[] = []
    if (file) parts.push(fileAsText ? { name: 'file', value: 'not a file at all' } : { name: 'file', file: file.bytes, filename: file.filename, type: file.type })
    for (const [name, v] of Object.entries({ page, alt, caption, category })) if (v !== undefined) parts.push({ name, value: asText(v) })
    if (twice) parts.push(...parts.filter((p) => p.name === twice))
    return { kind: 'form', parts: [...parts, ...extra] }
  })

/** Multipart written by hand, broken in the ways a client or an attacker breaks it. */
const rawMultipart = fc
  .record({
    flaw: fc.constantFrom('none', 'no-end', 'lf-only', 'mismatch', 'no-disposition', 'unquoted', 'long-header', 'star-name', 'nested', 'no-parts', 'preamble', 'quoted-boundary'),
    boundary: fc.constantFrom('b', 'x'.repeat(70), '----WebKitFormBoundary7MA4YWxkTrZu0gW', 'a b', '"q"'),
    file: fc.constantFrom(...GOOD_FILES, 'svg'),
  })
  .map(({ flaw, boundary, file }): Body => {
    const b = boundary
    const nl = flaw === 'lf-only' ? '\n' : '\r\n'
    const disposition = (name: string, extra = '') => (flaw === 'no-disposition' ? 'X-Nothing: here' : flaw === 'unquoted' ? `Content-Disposition: form-data; name=${name}${extra.replaceAll('"', '')}` : `Content-Disposition: form-data; name="${name}"${extra}`)
    const fileHeader = flaw === 'star-name' ? `Content-Disposition: form-data; name="file"; filename*=UTF-8''%e2%82%ac%00.jpg` : disposition('file', '; filename="a.jpg"')
    const longHeader = flaw === 'long-header' ? `${nl}X-Long: ${'h'.repeat(20_000)}` : ''
    const sep = flaw === 'mismatch' ? 'other' : b
    const bytes = new Lazy(`raw multipart (${flaw}) with ${file}`, (w) => {
      const text = (s: string) => new TextEncoder().encode(s)
      const chunks: Uint8Array[] = []
      if (flaw === 'preamble') chunks.push(text(`preamble junk${nl}`))
      if (flaw !== 'no-parts') {
        chunks.push(text(`--${sep}${nl}${disposition('page')}${nl}${nl}genesis${nl}`))
        chunks.push(text(`--${sep}${nl}${disposition('alt')}${nl}${nl}A desk${nl}`))
        if (flaw === 'nested') chunks.push(text(`--${sep}${nl}Content-Type: multipart/mixed; boundary=inner${nl}${nl}--inner${nl}${nl}x${nl}--inner--${nl}`))
        chunks.push(text(`--${sep}${nl}${fileHeader}${longHeader}${nl}Content-Type: image/jpeg${nl}${nl}`), w.file(file), text(nl))
      }
      if (flaw !== 'no-end') chunks.push(text(`--${sep}--${nl}`))
      return Buffer.concat(chunks)
    })
    const type = flaw === 'quoted-boundary' ? `multipart/form-data; boundary="${b}"` : `multipart/form-data; boundary=${b}`
    return { kind: 'bytes', bytes, type }
  })

/** Over 25 MB (MiB): made once, lazily, and only this rarely. */
const oversize: fc.Arbitrary<Body> = fc.constant({ kind: 'form', parts: [{ name: 'page', value: 'genesis' }, { name: 'alt', value: 'Too big' }, { name: 'file', file: fileOf('oversize'), filename: 'big.jpg', type: 'image/jpeg' }] })

const uploadBody: fc.Arbitrary<Body> = fc.oneof(
  { weight: 60, arbitrary: uploadForm },
  { weight: 12, arbitrary: fc.array(fc.oneof(textPart, fc.record({ name: fc.constantFrom('file', 'alt', 'x'), file: uploadFile, filename, type: fileType })), { maxLength: 6 }).map((parts): Body => ({ kind: 'form', parts })) },
  { weight: 12, arbitrary: rawMultipart },
  { weight: 10, arbitrary: anyBody },
  {
    weight: 4,
    arbitrary: fc
      .tuple(uploadForm, fc.constantFrom('multipart/form-data', 'multipart/form-data; boundary=wrong', 'application/json', 'text/plain'))
      .map(([b, type]): Body => (b.kind === 'form' ? { ...b, type } : b)),
  },
  { weight: 1, arbitrary: oversize },
)

// ---- The reorder body: the page's real id list, shuffled and sometimes spoiled ----

const orderBody: fc.Arbitrary<Body> = fc
  .record({ page: fc.constantFrom(...PAGES), seed: fc.nat(), spoil: fc.constantFrom('none', 'none', 'none', 'drop', 'duplicate', 'foreign', 'extra', 'lowercase', 'empty'), type: jsonType })
  .map(({ page, seed, spoil, type }): Body => ({
    kind: 'json',
    type,
    value: new Lazy(`ids of ${page}, shuffled (${spoil})`, async (w) => {
      const ids = shuffle(await w.pageImageIds(page), seed)
      const other = await w.pageImageIds(page === 'genesis' ? 'hive' : 'genesis')
      if (spoil === 'drop') ids.pop()
      if (spoil === 'duplicate' && ids.length) ids.push(ids[0]!)
      if (spoil === 'foreign' && other.length) ids.push(other[0]!)
      if (spoil === 'extra') ids.push('01ARZ3NDEKTSV4RRFFQ69G5FAV')
      if (spoil === 'lowercase' && ids.length) ids[0] = ids[0]!.toLowerCase()
      return { page, ids: spoil === 'empty' ? [] : ids }
    }),
  }))

function shuffle<T>(list: T[], seed: number): T[] {
  const out = [...list]
  let s = seed || 1
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31
    const j = s % (i + 1)
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

// ---- The routes ----

const Page = (data: TSchema) => t.Object({ data: t.Array(data), meta: Meta })
const ADMIN_WRITE: Table[] = ['admin_users', 'refresh_tokens', 'auth_tokens']
const INBOX: Table[] = ['enquiries', 'enquiry_replies']
const MEDIA: Table[] = ['media_images', 'media_variants', 'media_categories']

export const ROUTES: Route[] = [
  // Public
  { name: 'GET /health', method: 'GET', path: () => '/health', auth: 'public', expect: { allowed: [200], success: { 200: Health } } },
  {
    name: 'GET /spaces/:slug/gallery',
    method: 'GET',
    path: (slug) => `/spaces/${slug}/gallery`,
    auth: 'public',
    id: pathId(fc.constantFrom(...PAGES)),
    query: queryPairs(GalleryQuery, { category: slug }),
    headers: fc.record({ 'if-none-match': fc.option(fc.nat().map((i) => new Lazy('a gallery ETag', (w) => pick(w.etags(), i, '"none"'))), { nil: undefined }) }).map(definedOnly),
    expect: { allowed: [200, 304, 400, 404], success: { 200: SpaceGallery } },
  },
  {
    name: 'POST /enquiries',
    method: 'POST',
    path: () => '/enquiries',
    auth: 'public',
    body: jsonBody(Submission, enquiryHints),
    expect: { allowed: [200, 400, 413, 422, 429], okEnvelope: true },
    tables: ['enquiries'],
    // A submission over the rate limit is stored as spam, and only that (decision 2).
    allowance: (status) => (status === 429 ? { inserts: { table: 'enquiries', max: 1, row: (r) => r.status === 'spam' && r.spam_reason === 'rate' } } : undefined),
  },

  // Admin auth
  {
    name: 'POST /admin/auth/login',
    method: 'POST',
    path: () => '/admin/auth/login',
    auth: 'public',
    // Mostly a phone that exists and the fixtures' password, so that logins succeed and sessions start.
    body: jsonBody(LoginBody, {
      phone: fc.oneof({ weight: 4, arbitrary: fc.nat().map((i) => new Lazy('a fixture phone', (w) => pick(w.loginPhones(), i, '+441174960000'))) }, { weight: 2, arbitrary: knownPhone }, { weight: 1, arbitrary: phone }),
      password: fc.oneof({ weight: 3, arbitrary: fc.constant(PASSWORD) }, { weight: 1, arbitrary: password }),
    }),
    // 403: an Origin outside ADMIN_ORIGINS (decision 26, login CSRF).
    expect: { allowed: [200, 400, 401, 403, 413, 429], success: { 200: SessionResponse } },
    tables: ADMIN_WRITE,
    // A failed login counts against the phone's account and may lock it (decision 17).
    allowance: (status) => (status === 401 || status === 429 ? { columns: { admin_users: ['failed_login_count', 'locked_until'] } } : undefined),
  },
  {
    name: 'POST /admin/auth/refresh',
    method: 'POST',
    path: () => '/admin/auth/refresh',
    auth: 'public',
    body: anyBody,
    headers: cookieHeaders,
    expect: { allowed: [200, 400, 401, 403, 413], success: { 200: SessionResponse } },
    tables: ADMIN_WRITE,
    // A rotated token presented again revokes its whole family (the spec's rotation table).
    allowance: (status) => (status === 401 ? { columns: { refresh_tokens: ['revoked_at'] } } : undefined),
  },
  {
    name: 'POST /admin/auth/logout',
    method: 'POST',
    path: () => '/admin/auth/logout',
    auth: 'public',
    body: anyBody,
    headers: cookieHeaders,
    expect: { allowed: [200, 400, 403, 413], success: { 200: Ok } },
    tables: ADMIN_WRITE,
  },
  {
    name: 'POST /admin/auth/forgot-password',
    method: 'POST',
    path: () => '/admin/auth/forgot-password',
    auth: 'public',
    body: jsonBody(ForgotBody, { email }),
    expect: { allowed: [200, 400, 413], success: { 200: Ok } },
    tables: ADMIN_WRITE,
  },
  {
    name: 'POST /admin/auth/reset-password',
    method: 'POST',
    path: () => '/admin/auth/reset-password',
    auth: 'public',
    body: jsonBody(ResetBody, {
      token: fc.tuple(fc.nat(), fc.constantFrom(true, true, true, false)).map(([i, live]) => new Lazy(`a mailed ${live ? 'live' : 'used or live'} token`, async (w) => pick(await w.resetTokens(live), i, 'no-token'))),
      password,
    }),
    expect: { allowed: [200, 400, 413], success: { 200: Ok } },
    tables: ADMIN_WRITE,
  },
  { name: 'GET /admin/auth/me', method: 'GET', path: () => '/admin/auth/me', auth: 'any', expect: { allowed: [200, 401], success: { 200: MeResponse } } },

  // Admin users
  {
    name: 'GET /admin/users',
    method: 'GET',
    path: () => '/admin/users',
    auth: 'superadmin',
    query: queryPairs(UserQuery, { q: fc.constantFrom('Admin', '+44', '@', '%', '_', "'") }),
    expect: { allowed: [200, 400, 401, 403], success: { 200: Page(User) } },
  },
  {
    name: 'GET /admin/users/:id',
    method: 'GET',
    path: (id) => `/admin/users/${id}`,
    auth: 'superadmin',
    id: pathId(fc.oneof({ weight: 4, arbitrary: userId }, { weight: 1, arbitrary: selfId('superadmin') })),
    expect: { allowed: [200, 401, 403, 404], success: { 200: t.Object({ user: User }) } },
  },
  {
    name: 'POST /admin/users',
    method: 'POST',
    path: () => '/admin/users',
    auth: 'superadmin',
    body: jsonBody(CreateUserBody, { phone, email: fc.oneof(email, fc.constant(null)), password: fc.oneof({ weight: 3, arbitrary: strongPassword }, { weight: 1, arbitrary: password }) }),
    expect: { allowed: [201, 400, 401, 403, 413, 422], success: { 201: t.Object({ user: User }) } },
    tables: ADMIN_WRITE,
  },
  {
    name: 'PATCH /admin/users/:id',
    method: 'PATCH',
    path: (id) => `/admin/users/${id}`,
    auth: 'superadmin',
    id: pathId(fc.oneof({ weight: 4, arbitrary: userId }, { weight: 1, arbitrary: selfId('superadmin') })),
    body: jsonBody(UpdateUserBody, { phone, email: fc.oneof(email, fc.constant(null)) }),
    expect: { allowed: [200, 400, 401, 403, 404, 413, 422], success: { 200: t.Object({ user: User }) } },
    tables: ADMIN_WRITE,
  },
  {
    name: 'POST /admin/users/:id/password',
    method: 'POST',
    path: (id) => `/admin/users/${id}/password`,
    auth: 'any',
    id: pathId(fc.oneof({ weight: 2, arbitrary: userId }, { weight: 1, arbitrary: selfId('superadmin') }, { weight: 1, arbitrary: selfId('admin') })),
    body: jsonBody(PasswordBody, { currentPassword: fc.oneof(fc.constant(PASSWORD), password), newPassword: fc.oneof(weakPassword, nastyString, strongPassword) }),
    expect: { allowed: [200, 400, 401, 403, 404, 413, 422], success: { 200: Ok } },
    tables: ADMIN_WRITE,
  },

  // Admin enquiries
  {
    name: 'GET /admin/enquiries',
    method: 'GET',
    path: () => '/admin/enquiries',
    auth: 'any',
    query: queryPairs(InboxQuery, { from: date, to: date, q: fc.constantFrom('Hello', '%', '_', '!', "'", 'example.com') }),
    expect: { allowed: [200, 400, 401], success: { 200: Page(EnquiryListItem) } },
  },
  {
    name: 'GET /admin/enquiries/:id',
    method: 'GET',
    path: (id) => `/admin/enquiries/${id}`,
    auth: 'any',
    id: pathId(enquiryId),
    expect: { allowed: [200, 401, 404], success: { 200: t.Object({ enquiry: EnquiryDetail }) } },
    tables: INBOX,
  },
  {
    name: 'PATCH /admin/enquiries/:id',
    method: 'PATCH',
    path: (id) => `/admin/enquiries/${id}`,
    auth: 'any',
    id: pathId(enquiryId),
    body: jsonBody(StatusBody, { status: fc.constantFrom(...STATUSES) }),
    expect: { allowed: [200, 400, 401, 404, 413], success: { 200: t.Object({ enquiry: EnquiryDetail }) } },
    tables: INBOX,
  },
  {
    name: 'POST /admin/enquiries/:id/replies',
    method: 'POST',
    path: (id) => `/admin/enquiries/${id}/replies`,
    auth: 'any',
    id: pathId(enquiryId),
    body: jsonBody(ReplyBody),
    expect: { allowed: [201, 400, 401, 404, 413], success: { 201: t.Object({ enquiry: EnquiryDetail }) } },
    tables: INBOX,
  },

  // Admin media
  { name: 'GET /admin/media/categories', method: 'GET', path: () => '/admin/media/categories', auth: 'any', expect: { allowed: [200, 401], success: { 200: t.Object({ categories: t.Array(Category) }) } } },
  {
    name: 'GET /admin/media',
    method: 'GET',
    path: () => '/admin/media',
    auth: 'any',
    query: queryPairs(MediaQuery, { page: fc.constantFrom(...PAGES), category: slug }),
    expect: { allowed: [200, 400, 401], success: { 200: t.Object({ images: t.Array(MediaImage) }) } },
  },
  {
    name: 'POST /admin/media',
    method: 'POST',
    path: () => '/admin/media',
    auth: 'any',
    body: uploadBody,
    expect: { allowed: [201, 400, 401, 413, 422], success: { 201: t.Object({ image: MediaImage }) } },
    tables: MEDIA,
  },
  {
    name: 'PATCH /admin/media/order',
    method: 'PATCH',
    path: () => '/admin/media/order',
    auth: 'any',
    body: fc.oneof({ weight: 2, arbitrary: orderBody }, { weight: 1, arbitrary: jsonBody(OrderBody, { page: fc.constantFrom(...PAGES) }) }),
    expect: { allowed: [200, 400, 401, 413, 422], success: { 200: Ok } },
    tables: MEDIA,
  },
  {
    name: 'PATCH /admin/media/:id',
    method: 'PATCH',
    path: (id) => `/admin/media/${id}`,
    auth: 'any',
    id: pathId(imageId),
    body: jsonBody(UpdateBody, { category: fc.oneof(slug, fc.constant(null)) }),
    expect: { allowed: [200, 400, 401, 404, 413, 422], success: { 200: t.Object({ image: MediaImage }) } },
    tables: MEDIA,
  },
  {
    name: 'PATCH /admin/media/:id/visibility',
    method: 'PATCH',
    path: (id) => `/admin/media/${id}/visibility`,
    auth: 'any',
    id: pathId(imageId),
    body: jsonBody(VisibilityBody),
    expect: { allowed: [200, 400, 401, 404, 413], success: { 200: t.Object({ image: MediaImage }) } },
    tables: MEDIA,
  },
  {
    name: 'DELETE /admin/media/:id',
    method: 'DELETE',
    path: (id) => `/admin/media/${id}`,
    auth: 'any',
    id: pathId(imageId),
    body: anyBody,
    expect: { allowed: [204, 400, 401, 404, 413] },
    tables: MEDIA,
  },

  // Everything else: derivative files, preflights, unknown paths and methods
  {
    name: 'GET /media/*',
    method: 'GET',
    path: (rest) => `/media/${rest}`,
    auth: 'public',
    id: fc.oneof(
      { weight: 3, arbitrary: fc.nat().map((i) => new Lazy('a derivative path', async (w) => pick(await w.variantPaths(), i, 'genesis/none/640.avif'))) },
      {
        weight: 3,
        arbitrary: fc.constantFrom(
          '../secret.jpg',
          '%2e%2e/secret.jpg',
          '%2e%2e%2fsecret.jpg',
          'genesis/..%2f..%2fsecret.jpg',
          'genesis/link.jpg',
          'genesis/linkdir/x.jpg',
          '..%5csecret.jpg',
          'genesis%00/x.jpg',
          '%252e%252e/secret.jpg',
          '....//secret.jpg',
          'genesis/./x.jpg',
          '/etc/passwd',
          '../storage/originals',
          '.%2e/secret.jpg',
          'genesis/x.JPG',
          'genesis/x.svg',
        ),
      },
      { weight: 2, arbitrary: pathId() },
    ),
    expect: { allowed: [200, 404], file: true },
  },
]

/** Methods and paths outside the table: unknown routes, wrong methods, preflights. */
export const STRAY: Route = {
  name: 'ANY stray path',
  method: 'ANY',
  path: (p) => p,
  auth: 'any',
  id: fc
    .tuple(
      fc.constantFrom('/', '/admin', '/admin/', '/admin/users/x/y', '/enquiries/1', '/spaces', '/spaces/genesis', '/health/', '/HEALTH', '/admin/media/order/x', '/admin/auth', '/admin/auth/login/', '/openapi', '/.env', '/favicon.ico', '//admin//users', '/admin/enquiries/%2e%2e/users'),
      fc.option(pathId(), { nil: undefined }),
    )
    .map(([base, extra]) => (extra === undefined ? base : `${base.replace(/\/$/, '')}/${typeof extra === 'string' ? extra : ''}`)),
  body: anyBody,
  expect: { allowed: [200, 201, 204, 400, 401, 403, 404, 405, 413, 422] },
  tables: [],
}
export const STRAY_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'PROPFIND', 'FOO']

export const byName = new Map([...ROUTES, STRAY].map((r) => [r.name, r]))

function definedOnly<T extends Record<string, unknown>>(o: T) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Record<string, string | Lazy<string | undefined>>
}

/** One request for `route`: its token, path id, query, body and headers. */
export function requestFor(route: Route, method?: fc.Arbitrary<string>): fc.Arbitrary<FuzzRequest & { method?: string }> {
  return fc.record({
    route: fc.constant(route.name),
    method: method ?? fc.constant(undefined),
    auth: authKind(route.auth === 'public' ? 'public' : route.auth === 'superadmin' ? 'superadmin' : 'admin'),
    id: route.id ?? fc.constant(''),
    query: route.query ?? fc.oneof({ weight: 6, arbitrary: fc.constant('') }, { weight: 1, arbitrary: queryPairs(undefined) }),
    body: route.body ?? fc.constant<Body>({ kind: 'none' }),
    headers: fc.tuple(fc.oneof({ weight: 2, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: extraHeaders }), route.headers ?? fc.constant({})).map(([a, b]) => ({ ...a, ...b })),
    xff: forwardedFor,
  }) as fc.Arbitrary<FuzzRequest & { method?: string }>
}

/** The route groups, one property each, with their default share of the run budget. */
export const GROUPS: { name: string; runs: number; routes: [string, number][]; stray?: boolean }[] = [
  { name: 'public routes', runs: 700, routes: [['GET /health', 1], ['GET /spaces/:slug/gallery', 3], ['POST /enquiries', 5]] },
  {
    name: 'admin auth routes',
    runs: 500,
    routes: [['POST /admin/auth/login', 3], ['POST /admin/auth/refresh', 3], ['POST /admin/auth/logout', 2], ['POST /admin/auth/forgot-password', 2], ['POST /admin/auth/reset-password', 2], ['GET /admin/auth/me', 1]],
  },
  { name: 'admin user routes', runs: 600, routes: [['GET /admin/users', 2], ['GET /admin/users/:id', 2], ['POST /admin/users', 3], ['PATCH /admin/users/:id', 3], ['POST /admin/users/:id/password', 2]] },
  { name: 'admin enquiry routes', runs: 600, routes: [['GET /admin/enquiries', 3], ['GET /admin/enquiries/:id', 2], ['PATCH /admin/enquiries/:id', 2], ['POST /admin/enquiries/:id/replies', 2]] },
  // Uploads first, so that the other media routes have images to work on.
  { name: 'the media upload', runs: 350, routes: [['POST /admin/media', 1]] },
  { name: 'admin media routes', runs: 600, routes: [['GET /admin/media/categories', 1], ['GET /admin/media', 2], ['PATCH /admin/media/order', 3], ['PATCH /admin/media/:id', 3], ['PATCH /admin/media/:id/visibility', 3], ['DELETE /admin/media/:id', 1]] },
  { name: 'files, preflights and stray routes', runs: 500, routes: [['GET /media/*', 2]], stray: true },
]
