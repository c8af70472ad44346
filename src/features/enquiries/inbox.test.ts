import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import sql from 'sql-template-tag'
import { ulid } from 'ulid'
import { json, startApp, type TestApp } from '../../../test/harness.ts'
import { createAdmin, createEnquiry, login, send, type LoggedIn } from '../../../test/factories.ts'
import { startSmtpSink, type SmtpSink } from '../../../test/smtp.ts'
import { parseBound } from './inbox.ts'

const LIST_KEYS = ['createdAt', 'email', 'id', 'message', 'name', 'notifiedAt', 'phone', 'replyCount', 'source', 'spamReason', 'spamScore', 'status', 'updatedAt']
const DETAIL_KEYS = [...LIST_KEYS, 'ipHash', 'referer', 'replies', 'userAgent'].sort()
const REPLY_KEYS = ['author', 'body', 'createdAt', 'deliveryError', 'deliveryStatus', 'id', 'sentAt']

let sink: SmtpSink
let app: TestApp
let session: LoggedIn
let admin: Awaited<ReturnType<typeof createAdmin>>

beforeAll(async () => {
  sink = await startSmtpSink()
  app = await startApp({ env: sink.env })
  admin = await createAdmin(app, { name: 'Grace Hopper' })
  session = await login(app, admin.phone)
})
afterAll(async () => {
  await app.destroy()
  await sink.close()
})
beforeEach(() => sink.setMode('accept'))

const get = async (path: string) => {
  const res = await send(app, 'GET', path, undefined, session)
  return { status: res.status, body: await json(res) }
}
const statusOf = async (id: string) => (await app.db.one<{ status: string }>(sql`SELECT status FROM enquiries WHERE id = ${id}`))!.status

describe('access', () => {
  test.each([
    ['GET', '/admin/enquiries'],
    ['GET', `/admin/enquiries/${ulid()}`],
    ['PATCH', `/admin/enquiries/${ulid()}`],
    ['POST', `/admin/enquiries/${ulid()}/replies`],
  ])('%s %s without a token is 401', async (method, path) => {
    const res = await send(app, method, path, method === 'GET' ? undefined : {})
    expect(res.status).toBe(401)
    expect((await json(res)).error).toEqual(expect.any(String))
  })

  test('a request without a token is 401 even when its body and query are invalid too', async () => {
    expect((await send(app, 'GET', '/admin/enquiries?perPage=0&status=x')).status).toBe(401)
    expect((await send(app, 'PATCH', `/admin/enquiries/${ulid()}`, { status: 'new' })).status).toBe(401)
    expect((await send(app, 'POST', `/admin/enquiries/${ulid()}/replies`, { body: '' })).status).toBe(401)
  })

  test('an admin who is not a superadmin may use the inbox', async () => {
    expect(admin.role).toBe('admin')
    expect((await get('/admin/enquiries')).status).toBe(200)
  })
})

describe('GET /admin/enquiries', () => {
  // Its own source (`home`) and time window keep these rows apart from other tests' rows.
  const day = (d: number, h = 12) => new Date(Date.UTC(2031, 0, d, h))
  let rows: Awaited<ReturnType<typeof createEnquiry>>[]
  beforeAll(async () => {
    rows = [
      await createEnquiry(app, { source: 'home', name: 'Zoë Ångström', email: 'ZOE@Example.com', createdAt: day(1, 0) }),
      await createEnquiry(app, { source: 'home', message: 'Do you have a FUNCTION hall for 80?', createdAt: day(2) }),
      await createEnquiry(app, { source: 'home', phone: '+44 (20) 5555-0101', createdAt: day(3) }),
      await createEnquiry(app, { source: 'home', status: 'spam', spamReason: 'honeypot', spamScore: 100, createdAt: day(4) }),
      await createEnquiry(app, { source: 'home', message: 'A 100%_discount please, really!', createdAt: day(5, 23) }),
    ]
  })
  const ids = async (query: string) => {
    const { status, body } = await get(`/admin/enquiries?source=home&${query}`)
    expect(status).toBe(200)
    return (body.data as { id: string }[]).map((e) => e.id)
  }
  const idsOf = (...i: number[]) => i.map((n) => rows[n]!.id)

  test('returns { data, meta } of list items with exactly the documented keys', async () => {
    const { status, body } = await get('/admin/enquiries?source=home')
    expect(status).toBe(200)
    expect(Object.keys(body).sort()).toEqual(['data', 'meta'])
    expect(body.meta).toEqual({ page: 1, perPage: 20, total: 5 })
    for (const item of body.data) expect(Object.keys(item).sort()).toEqual(LIST_KEYS)
    const first = body.data.find((e: { id: string }) => e.id === rows[0]!.id)
    expect(first).toMatchObject({ name: 'Zoë Ångström', status: 'new', replyCount: 0, notifiedAt: null, createdAt: '2031-01-01T00:00:00.000Z' })
  })

  test('newest first by default; sort=oldest reverses', async () => {
    expect(await ids('')).toEqual(idsOf(4, 3, 2, 1, 0))
    expect(await ids('sort=newest')).toEqual(idsOf(4, 3, 2, 1, 0))
    expect(await ids('sort=oldest')).toEqual(idsOf(0, 1, 2, 3, 4))
  })

  test('pages with page and perPage, and meta.total counts every match', async () => {
    const { body } = await get('/admin/enquiries?source=home&perPage=2&page=2')
    expect(body.meta).toEqual({ page: 2, perPage: 2, total: 5 })
    expect(body.data.map((e: { id: string }) => e.id)).toEqual(idsOf(2, 1))
    expect((await get('/admin/enquiries?source=home&perPage=2&page=4')).body).toEqual({ data: [], meta: { page: 4, perPage: 2, total: 5 } })
  })

  test('filters by status and by source', async () => {
    expect(await ids('status=spam')).toEqual(idsOf(3))
    expect(await ids('status=new')).toEqual(idsOf(4, 2, 1, 0))
    const { body } = await get('/admin/enquiries?source=genesis&from=2031-01-01&to=2031-01-31')
    expect(body.meta.total).toBe(0)
  })

  test.each([
    ['a name, ignoring case', 'zoë', [0]],
    ['an e-mail, ignoring case', 'zoe@EXAMPLE', [0]],
    ['a message, ignoring case', 'function HALL', [1]],
    ['a phone number as typed', '(20) 5555', [2]],
    ['% and _ as plain characters', '100%_d', [4]],
  ])('q matches %s', async (_label, q, expected) => {
    expect(await ids(`q=${encodeURIComponent(q)}`)).toEqual(idsOf(...expected))
  })

  test('q of only spaces does not filter', async () => {
    expect(await ids('q=%20%20')).toHaveLength(5)
  })

  test('to given as a date includes that whole day (UTC); from as a date starts at midnight', async () => {
    expect(await ids('from=2031-01-05&to=2031-01-05')).toEqual(idsOf(4))
    expect(await ids('from=2031-01-02&to=2031-01-04&sort=oldest')).toEqual(idsOf(1, 2, 3))
    expect(await ids('to=2031-01-01')).toEqual(idsOf(0))
  })

  test('from and to as datetimes are exact instants, inclusive; a datetime without a zone is UTC', async () => {
    expect(await ids('from=2031-01-02T12:00:00Z&to=2031-01-03T12:00:00.000Z&sort=oldest')).toEqual(idsOf(1, 2))
    expect(await ids('from=2031-01-02T12:00:00.001Z&to=2031-01-03T11:59')).toEqual([])
    expect(await ids('from=2031-01-05T23:00')).toEqual(idsOf(4))
    // 2031-01-02T14:00+02:00 is 12:00 UTC.
    expect(await ids(`from=${encodeURIComponent('2031-01-02T14:00+02:00')}&to=${encodeURIComponent('2031-01-02T14:00+02:00')}`)).toEqual(idsOf(1))
  })

  test.each([
    ['status=unread', 'status'],
    ['source=twitter', 'source'],
    ['sort=name', 'sort'],
    ['from=yesterday', 'from'],
    ['from=2031-02-30', 'from'],
    ['to=2031-13-01', 'to'],
    ['to=2031-01-01T24:00', 'to'],
    ['from=2031-01-05&to=2031-01-04', 'to'],
    ['perPage=0', 'perPage'],
    ['perPage=101', 'perPage'],
    ['perPage=ten', 'perPage'],
    ['page=0', 'page'],
    ['q=0&perPage=0', 'perPage'],
    [`q=${'x'.repeat(201)}`, 'q'],
  ])('a bad query value (%s) is 400 naming the field', async (query, field) => {
    const { status, body } = await get(`/admin/enquiries?${query}`)
    expect(status).toBe(400)
    expect(body).toEqual({ error: expect.any(String), requestId: expect.any(String), fields: expect.any(Object) })
    expect(Object.keys(body.fields)).toEqual([field])
  })

  test('the number of database queries does not grow with the page size (reply counts come with the rows)', async () => {
    const db = app.db
    const counted = async (path: string) => {
      let n = 0
      const { query, one } = db
      db.query = (...args) => (n++, query.apply(db, args)) as never
      db.one = (...args) => (n++, one.apply(db, args)) as never
      try {
        expect((await get(path)).status).toBe(200)
      } finally {
        db.query = query
        db.one = one
      }
      return n
    }
    expect(await counted('/admin/enquiries?source=home&perPage=5')).toBe(await counted('/admin/enquiries?source=home&perPage=1'))
  })

  test('perPage 100 is allowed', async () => {
    expect((await get('/admin/enquiries?perPage=100')).body.meta.perPage).toBe(100)
  })

  test('replyCount counts each row’s replies', async () => {
    const e = await createEnquiry(app, { source: 'home', createdAt: day(6) })
    await send(app, 'POST', `/admin/enquiries/${e.id}/replies`, { body: 'First answer' }, session)
    await send(app, 'POST', `/admin/enquiries/${e.id}/replies`, { body: 'Second answer' }, session)
    const { body } = await get('/admin/enquiries?source=home&from=2031-01-06')
    expect(body.data).toHaveLength(1)
    expect(body.data[0]).toMatchObject({ id: e.id, replyCount: 2, status: 'replied' })
  })
})

describe('GET /admin/enquiries/{id}', () => {
  test('returns { enquiry } with the detail keys, and a new enquiry becomes read', async () => {
    const e = await createEnquiry(app)
    const { status, body } = await get(`/admin/enquiries/${e.id}`)
    expect(status).toBe(200)
    expect(Object.keys(body)).toEqual(['enquiry'])
    expect(Object.keys(body.enquiry).sort()).toEqual(DETAIL_KEYS)
    expect(body.enquiry).toMatchObject({
      id: e.id,
      status: 'read',
      userAgent: 'Mozilla/5.0 (test)',
      referer: 'https://spaces.test/contact',
      ipHash: 'a'.repeat(64),
      replies: [],
    })
    expect(await statusOf(e.id)).toBe('read')
  })

  test.each(['replied', 'spam', 'archived'] as const)('opening a %s enquiry leaves its status', async (status) => {
    const e = await createEnquiry(app, { status })
    expect((await get(`/admin/enquiries/${e.id}`)).body.enquiry.status).toBe(status)
    expect(await statusOf(e.id)).toBe(status)
  })

  test.each([
    ['an unknown id', () => ulid()],
    ['a malformed id', () => 'not-an-id'],
    ['a lower-case id', () => ulid().toLowerCase()],
    ['an overlong id', () => 'Z'.repeat(300)],
  ])('%s is 404', async (_label, id) => {
    const { status, body } = await get(`/admin/enquiries/${id()}`)
    expect(status).toBe(404)
    expect(body).toEqual({ error: expect.any(String), requestId: expect.any(String) })
  })
})

describe('POST /admin/enquiries/{id}/replies', () => {
  const reply = (id: string, body: unknown) => send(app, 'POST', `/admin/enquiries/${id}/replies`, body, session)

  test('stores the reply, marks the enquiry replied, e-mails the enquirer and answers 201 with the detail', async () => {
    const e = await createEnquiry(app, { status: 'archived' })
    const res = await reply(e.id, { body: '  Yes, we have desks in March.\r\nSee you soon!  ' })
    expect(res.status).toBe(201)
    const { enquiry } = await json(res)
    expect(Object.keys(enquiry).sort()).toEqual(DETAIL_KEYS)
    expect(enquiry.status).toBe('replied')
    expect(enquiry.replyCount).toBe(1)
    expect(enquiry.replies).toHaveLength(1)
    const [r] = enquiry.replies
    expect(Object.keys(r).sort()).toEqual(REPLY_KEYS)
    expect(r).toMatchObject({
      body: 'Yes, we have desks in March.\nSee you soon!',
      author: { id: admin.id, name: 'Grace Hopper' },
      deliveryStatus: 'sent',
      deliveryError: null,
    })
    expect(r.sentAt).toMatch(/Z$/)
    const mail = await sink.waitFor((m) => m.text?.includes('Yes, we have desks in March.') ?? false)
    expect(mail.to && 'text' in mail.to ? mail.to.text : '').toBe(e.email)
    expect(mail.from?.text).toContain('no-reply@spaces.test')
    expect(mail.replyTo?.text).toBe('team@spaces.test, owner@spaces.test')
    expect(mail.subject).toBe('Re: your enquiry')
    expect(mail.text).toContain(e.message)
  })

  test('the reply body is HTML-escaped in the e-mail and kept as written in the text part', async () => {
    const e = await createEnquiry(app, { name: 'Eve <b>Evil</b>' })
    const body = 'Look: <script>alert("x")</script> & <a href="https://evil.test">click</a>'
    expect((await reply(e.id, { body })).status).toBe(201)
    const mail = await sink.waitFor((m) => m.text?.includes('<script>alert("x")</script>') ?? false)
    const html = String(mail.html)
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;a href=&quot;https://evil.test&quot;&gt;')
    expect(html).not.toContain('<script>')
    expect(html).not.toContain('<a href="https://evil.test"')
    expect(html).toContain('Eve &lt;b&gt;Evil&lt;/b&gt;')
  })

  test.each(['reject', 'drop'] as const)('an SMTP server that will not take it (%s) gives 201 with deliveryStatus failed', async (mode) => {
    sink.setMode(mode)
    const e = await createEnquiry(app)
    const res = await reply(e.id, { body: 'Are you there?' })
    expect(res.status).toBe(201)
    const { enquiry } = await json(res)
    expect(enquiry.status).toBe('replied')
    const [r] = enquiry.replies
    expect(r.deliveryStatus).toBe('failed')
    expect(r.sentAt).toBeNull()
    expect(r.deliveryError).toEqual(expect.any(String))
    expect(r.deliveryError.length).toBeGreaterThan(0)
    expect(r.deliveryError.length).toBeLessThanOrEqual(255)
  })

  test('several replies are listed oldest first, each with its own outcome', async () => {
    const e = await createEnquiry(app)
    sink.setMode('reject')
    await reply(e.id, { body: 'First try' })
    sink.setMode('accept')
    const { enquiry } = await json(await reply(e.id, { body: 'Second try' }))
    expect(enquiry.replies.map((r: { body: string; deliveryStatus: string }) => [r.body, r.deliveryStatus])).toEqual([
      ['First try', 'failed'],
      ['Second try', 'sent'],
    ])
  })

  test('a body of 5000 characters is accepted', async () => {
    const e = await createEnquiry(app)
    expect((await reply(e.id, { body: 'x'.repeat(5000) })).status).toBe(201)
  })

  test.each([
    ['empty', { body: '' }],
    ['only whitespace', { body: ' \n\t ' }],
    ['over 5000 characters', { body: 'x'.repeat(5001) }],
    ['missing', {}],
    ['not text', { body: 42 }],
  ])('a body that is %s is 400 naming body, and nothing is stored or sent', async (_label, payload) => {
    const e = await createEnquiry(app)
    const sent = sink.messages.length
    const res = await reply(e.id, payload)
    expect(res.status).toBe(400)
    expect(Object.keys((await json(res)).fields)).toEqual(['body'])
    expect(await app.db.query(sql`SELECT id FROM enquiry_replies WHERE enquiry_id = ${e.id}`)).toHaveLength(0)
    expect(await statusOf(e.id)).toBe('new')
    expect(sink.messages.length).toBe(sent)
  })

  test('an unknown enquiry is 404 and sends nothing', async () => {
    const sent = sink.messages.length
    const res = await reply(ulid(), { body: 'Hello?' })
    expect(res.status).toBe(404)
    expect(sink.messages.length).toBe(sent)
  })
})

describe('PATCH /admin/enquiries/{id}', () => {
  const patch = (id: string, body: unknown) => send(app, 'PATCH', `/admin/enquiries/${id}`, body, session)

  test.each(['read', 'replied', 'spam', 'archived'] as const)('status %s is set and the detail returned', async (status) => {
    const e = await createEnquiry(app)
    const res = await patch(e.id, { status })
    expect(res.status).toBe(200)
    const { enquiry } = await json(res)
    expect(Object.keys(enquiry).sort()).toEqual(DETAIL_KEYS)
    expect(enquiry.status).toBe(status)
    expect(await statusOf(e.id)).toBe(status)
  })

  test('every status can be left for every settable status', async () => {
    const e = await createEnquiry(app)
    for (const status of ['archived', 'spam', 'read', 'replied', 'archived', 'read']) {
      expect((await json(await patch(e.id, { status }))).enquiry.status).toBe(status)
    }
  })

  test('status new is 400 naming status, and the status is unchanged', async () => {
    const e = await createEnquiry(app, { status: 'archived' })
    const res = await patch(e.id, { status: 'new' })
    expect(res.status).toBe(400)
    expect(Object.keys((await json(res)).fields)).toEqual(['status'])
    expect(await statusOf(e.id)).toBe('archived')
  })

  test.each([[{ status: 'deleted' }], [{}], [{ status: null }]])('a bad body (%p) is 400', async (body) => {
    const e = await createEnquiry(app)
    expect((await patch(e.id, body)).status).toBe(400)
    expect(await statusOf(e.id)).toBe('new')
  })

  test('an unknown or malformed id is 404', async () => {
    expect((await patch(ulid(), { status: 'read' })).status).toBe(404)
    expect((await patch('nope', { status: 'read' })).status).toBe(404)
  })

  test('updatedAt moves with a status change', async () => {
    const e = await createEnquiry(app, { createdAt: new Date('2020-01-01T00:00:00Z') })
    const { enquiry } = await json(await patch(e.id, { status: 'archived' }))
    expect(enquiry.createdAt).toBe('2020-01-01T00:00:00.000Z')
    expect(Date.parse(enquiry.updatedAt)).toBeGreaterThan(Date.parse(enquiry.createdAt))
  })
})

describe('interrupted replies', () => {
  test('a reply left pending by a stopped process is marked failed at the next start, a recent one is left', async () => {
    const e = await createEnquiry(app)
    const old = ulid()
    const recent = ulid()
    const insert = (id: string, at: Date) =>
      app.db.execute(sql`INSERT INTO enquiry_replies (id, enquiry_id, author_id, body, delivery_status, created_at)
                         VALUES (${id}, ${e.id}, ${admin.id}, ${'Lost?'}, 'pending', ${at})`)
    await insert(old, new Date(Date.now() - 11 * 60_000))
    await insert(recent, new Date())
    const restarted = await startApp({ reuse: { dir: app.dir, env: (app as TestApp & { env: Record<string, string> }).env }, migrate: false })
    try {
      const replies = async () =>
        Object.fromEntries(
          (await restarted.db.query(sql`SELECT id, delivery_status, delivery_error FROM enquiry_replies WHERE enquiry_id = ${e.id}`)).map((r) => [
            r.id,
            [r.delivery_status, r.delivery_error],
          ]),
        )
      for (let i = 0; i < 100 && (await replies())[old]![0] === 'pending'; i++) await Bun.sleep(20)
      const after = await replies()
      expect(after[old]).toEqual(['failed', expect.stringContaining('interrupted')])
      expect(after[recent]).toEqual(['pending', null])
    } finally {
      await restarted.stop()
    }
  })
})

describe('parseBound', () => {
  test.each([
    ['2031-02-28', 'from', '2031-02-28T00:00:00.000Z', true],
    ['2031-02-28', 'to', '2031-03-01T00:00:00.000Z', false],
    ['2032-02-29', 'from', '2032-02-29T00:00:00.000Z', true],
    ['2031-02-28T10:20', 'to', '2031-02-28T10:20:00.000Z', true],
    ['2031-02-28T10:20:30.123456Z', 'from', '2031-02-28T10:20:30.123Z', true],
    ['2031-02-28T00:30-01:30', 'from', '2031-02-28T02:00:00.000Z', true],
    ['0042-03-01', 'from', '0042-03-01T00:00:00.000Z', true],
    ['0004-02-29', 'to', '0004-03-01T00:00:00.000Z', false],
  ] as const)('%s as %s is %s', (value, end, at, inclusive) => {
    expect(parseBound(value, end)).toEqual({ at: new Date(at), inclusive })
  })

  test.each(['2031-02-29', '2031-00-10', '2031-04-31', '2031-01-01T23:60', '2031-01-01T10:00+24:00', '31-01-01', ''])('%p is no date', (value) => {
    expect(parseBound(value, 'from')).toBeUndefined()
  })
})
