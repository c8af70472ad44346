import { afterAll, beforeAll, describe, expect, expectTypeOf, test } from 'bun:test'
import { treaty } from '@elysiajs/eden'
import { startApp, type TestApp } from '../../test/harness.ts'
import { createAdmin, createEnquiry } from '../../test/factories.ts'
import type { App } from '../app.ts'

// The admin portal's view: a typed client from `App` alone, over HTTP. `parseDate: false` keeps
// timestamps the strings the schemas (and so the types) say they are; Eden's default turns them
// into Date objects behind the types' back.
let app: TestApp
let admin: Awaited<ReturnType<typeof createAdmin>>
let api: ReturnType<typeof treaty<App>>

beforeAll(async () => {
  app = await startApp()
  admin = await createAdmin(app, { name: 'Ada Lovelace' })
  const anonymous = treaty<App>(app.url, { parseDate: false })
  const { data, error } = await anonymous.admin.auth.login.post({ phone: admin.phone, password: admin.password })
  if (error) throw new Error(`login failed: ${error.status}`)
  api = treaty<App>(app.url, { parseDate: false, headers: { authorization: `Bearer ${data.accessToken}` } })
})
afterAll(() => app.destroy())

describe('Eden treaty over App', () => {
  test('login answers the typed session: an access token and the admin', async () => {
    const { data, error, status } = await treaty<App>(app.url, { parseDate: false }).admin.auth.login.post({ phone: admin.phone, password: admin.password })
    expect(error).toBeNull()
    expect(status).toBe(200)
    expectTypeOf(data!.admin.role).toEqualTypeOf<'superadmin' | 'admin'>()
    expectTypeOf(data!.admin.email).toEqualTypeOf<string | null>()
    expect(data!.accessToken).toEqual(expect.any(String))
    expect(data!.admin).toEqual({ id: admin.id, name: 'Ada Lovelace', phone: admin.phone, email: admin.email, role: 'admin', status: 'active' })
  })

  test('bad credentials are a typed 401 with the error envelope', async () => {
    const { data, error } = await treaty<App>(app.url, { parseDate: false }).admin.auth.login.post({ phone: admin.phone, password: 'wrong password' })
    expect(data).toBeNull()
    expect(error?.status).toBe(401)
    if (error?.status === 401) {
      expectTypeOf(error.value.error).toEqualTypeOf<string>()
      expectTypeOf(error.value.requestId).toEqualTypeOf<string>()
      expectTypeOf(error.value.fields).toEqualTypeOf<Record<string, string> | undefined>()
      expect(error.value).toEqual({ error: expect.any(String), requestId: expect.any(String) })
    }
  })

  test('me answers the signed-in admin', async () => {
    const { data } = await api.admin.auth.me.get()
    expect(data?.admin.id).toBe(admin.id)
  })

  test('lists enquiries with a typed query, and pages them', async () => {
    const older = await createEnquiry(app, { source: 'hive', createdAt: new Date(Date.UTC(2032, 0, 1)) })
    const newer = await createEnquiry(app, { source: 'hive', createdAt: new Date(Date.UTC(2032, 0, 2)) })
    const { data, error } = await api.admin.enquiries.get({ query: { source: 'hive', from: '2032-01-01', sort: 'oldest', perPage: 10 } })
    expect(error).toBeNull()
    expectTypeOf(data!.meta).toEqualTypeOf<{ page: number; perPage: number; total: number }>()
    expectTypeOf(data!.data[0]!.status).toEqualTypeOf<'new' | 'read' | 'replied' | 'spam' | 'archived'>()
    expect(data!.meta).toEqual({ page: 1, perPage: 10, total: 2 })
    expect(data!.data.map((e) => e.id)).toEqual([older.id, newer.id])
    expect(data!.data[0]).toMatchObject({ name: older.name, replyCount: 0, createdAt: '2032-01-01T00:00:00.000Z' })
  })

  test('opens an enquiry (new becomes read), then archives it', async () => {
    const enquiry = await createEnquiry(app)
    const opened = await api.admin.enquiries({ id: enquiry.id }).get()
    expect(opened.error).toBeNull()
    expectTypeOf(opened.data!.enquiry.replies).toEqualTypeOf<
      { id: string; body: string; author: { id: string; name: string }; deliveryStatus: 'pending' | 'sent' | 'failed'; deliveryError: string | null; sentAt: string | null; createdAt: string }[]
    >()
    expect(opened.data!.enquiry).toMatchObject({ id: enquiry.id, email: enquiry.email, status: 'read', replies: [], ipHash: enquiry.ipHash })

    const patched = await api.admin.enquiries({ id: enquiry.id }).patch({ status: 'archived' })
    expect(patched.error).toBeNull()
    expect(patched.data!.enquiry.status).toBe('archived')
    expect(patched.data!.enquiry.updatedAt).toEqual(expect.any(String))
  })

  test('the body type refuses status new, and the server answers it with a typed 400', async () => {
    const enquiry = await createEnquiry(app)
    // @ts-expect-error `new` is not a settable status
    const { error } = await api.admin.enquiries({ id: enquiry.id }).patch({ status: 'new' })
    expect(error?.status).toBe(400)
    if (error?.status === 400) expect(Object.keys(error.value.fields ?? {})).toEqual(['status'])
  })

  test('an unknown enquiry is a typed 404', async () => {
    const { data, error } = await api.admin.enquiries({ id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }).get()
    expect(data).toBeNull()
    expect(error?.status).toBe(404)
  })

  test('lists the media categories', async () => {
    const { data, error } = await api.admin.media.categories.get()
    expect(error).toBeNull()
    expectTypeOf(data!.categories).toEqualTypeOf<{ id: number; slug: string; label: string }[]>()
    expect(data!.categories.map((c) => c.slug)).toEqual(expect.arrayContaining(['office', 'function-hall', 'sharing-corner', 'event-space', 'meeting-room']))
    for (const category of data!.categories) expect(category).toEqual({ id: expect.any(Number), slug: expect.any(String), label: expect.any(String) })
  })

  test('without the token an admin route is a typed 401', async () => {
    const { error } = await treaty<App>(app.url, { parseDate: false }).admin.media.categories.get()
    expect(error?.status).toBe(401)
  })
})
