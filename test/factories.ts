import { ulid } from 'ulid'
import { insertEnquiry, type NewEnquiry } from '../src/features/enquiries/queries.ts'
import { insertUser } from '../src/features/users/queries.ts'
import type { Role, Status } from '../src/features/users/model.ts'
import { hashPassword } from '../src/lib/passwords.ts'
import { json, type TestApp } from './harness.ts'

export const PASSWORD = 'correct horse battery staple'

let counter = 0

/** A fresh admin straight into the database; phone numbers are valid and unique per call. */
export async function createAdmin(
  app: Pick<TestApp, 'db'>,
  options: { role?: Role; status?: Status; password?: string | null; email?: string | null; name?: string } = {},
) {
  counter++
  const phone = `+4420794${String(60000 + ((process.pid * 7 + counter) % 40000)).padStart(5, '0')}`
  const now = new Date()
  const user = {
    id: ulid(),
    name: options.name ?? `Admin ${counter}`,
    phone,
    email: options.email === undefined ? `admin${counter}.${ulid().toLowerCase()}@spaces.test` : options.email,
    role: options.role ?? 'admin',
    status: options.status ?? 'active',
    passwordHash: options.password === null ? null : await hashPassword(options.password ?? PASSWORD),
    createdBy: null,
    createdAt: now,
    updatedAt: now,
  }
  await insertUser(app.db, user)
  return { ...user, password: options.password ?? PASSWORD }
}

export interface LoggedIn {
  accessToken: string
  /** The refresh token value as the cookie carries it. */
  refreshToken: string
  cookie: string
  setCookie: string
}

export async function login(app: TestApp, phone: string, password = PASSWORD, headers: Record<string, string> = {}): Promise<LoggedIn> {
  const res = await app.fetch('/admin/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ phone, password }),
  })
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${await res.text()}`)
  const setCookie = res.headers.get('set-cookie') ?? ''
  const refreshToken = /svc_admin_refresh=([^;]*)/.exec(setCookie)?.[1] ?? ''
  const body = await json(res)
  return { accessToken: body.accessToken, refreshToken, cookie: `svc_admin_refresh=${refreshToken}`, setCookie }
}

export const bearer = (session: { accessToken: string }) => ({ authorization: `Bearer ${session.accessToken}` })

/** A JSON request with optional bearer session. */
export function send(app: TestApp, method: string, path: string, body?: unknown, session?: { accessToken: string }) {
  return app.fetch(path, {
    method,
    headers: { 'content-type': 'application/json', ...(session ? bearer(session) : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

let enquiryCounter = 0

/** An enquiry straight into the database, as `POST /enquiries` would store it; `createdAt` settable. */
export async function createEnquiry(
  app: Pick<TestApp, 'db'>,
  options: Partial<Omit<NewEnquiry, 'now'>> & { createdAt?: Date } = {},
): Promise<NewEnquiry> {
  enquiryCounter++
  const now = options.createdAt ?? new Date()
  const enquiry: NewEnquiry = {
    id: ulid(),
    name: `Enquirer ${enquiryCounter}`,
    phone: '+44 20 7946 0000',
    email: `enquirer${enquiryCounter}@example.com`,
    message: `Hello, I would like to know more (${enquiryCounter}).`,
    source: 'contact',
    status: 'new',
    spamScore: 0,
    spamReason: null,
    userAgent: 'Mozilla/5.0 (test)',
    referer: 'https://spaces.test/contact',
    ipHash: 'a'.repeat(64),
    notifyAfter: null,
    ...options,
    now,
  }
  await insertEnquiry(app.db, enquiry)
  return enquiry
}
