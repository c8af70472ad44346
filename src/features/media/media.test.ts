import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, writeFileSync, rmSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import sql from 'sql-template-tag'
import { ulid } from 'ulid'
import { json, startApp, type TestApp } from '../../../test/harness.ts'
import { bearer, createAdmin, login, send, type LoggedIn } from '../../../test/factories.ts'
import * as images from '../../../test/images.ts'

const IMAGE_KEYS = ['alt', 'caption', 'category', 'createdAt', 'height', 'id', 'isVisible', 'order', 'page', 'src', 'status', 'updatedAt', 'variants', 'width']
const HASH_PATH = /^https:\/\/cdn\.test\/media\/(genesis|hive)\/[0-9a-f]{64}\/\d+\.(avif|webp|jpg)$/

let app: TestApp
let session: LoggedIn

beforeAll(async () => {
  app = await startApp()
  session = await login(app, (await createAdmin(app)).phone)
})
afterAll(() => app.destroy())

type Part = { file?: Blob | string; name?: string; page?: string; alt?: string; caption?: string; category?: string }

function form(part: Part): FormData {
  const body = new FormData()
  if (part.file !== undefined) body.set('file', typeof part.file === 'string' ? part.file : new File([part.file], part.name ?? 'photo.jpg'))
  for (const key of ['page', 'alt', 'caption', 'category'] as const) if (part[key] !== undefined) body.set(key, part[key]!)
  return body
}

const upload = (bytes: Uint8Array | Blob | string | undefined, fields: Omit<Part, 'file'> = {}) =>
  app.fetch('/admin/media', {
    method: 'POST',
    headers: bearer(session),
    body: form({ page: 'genesis', alt: 'A sunny desk', ...fields, file: bytes instanceof Uint8Array ? new Blob([bytes]) : bytes }),
  })

const uploaded = async (bytes: Uint8Array, fields: Omit<Part, 'file'> = {}) => {
  const res = await upload(bytes, fields)
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${await res.text()}`)
  return (await json(res)).image
}

const rowCount = async () => Number((await app.db.one<{ n: number }>(sql`SELECT COUNT(*) AS n FROM media_images`))!.n)
const tmpFiles = () => (existsSync(join(app.config.media.storageRoot, 'tmp')) ? readdirSync(join(app.config.media.storageRoot, 'tmp')) : [])
const widths = (list: { width: number }[]) => list.map((v) => v.width)

describe('POST /admin/media', () => {
  test('without a token is 401, before the body is read', async () => {
    const res = await app.fetch('/admin/media', { method: 'POST', body: form({ file: new Blob([await images.jpeg()]), page: 'genesis', alt: 'x' }) })
    expect(res.status).toBe(401)
  })

  test('a JPEG becomes a ready image: 201 { image } with the documented keys, variants and dimensions', async () => {
    const res = await upload(await images.jpeg(1200, 800), { caption: 'Morning light', category: 'office' })
    expect(res.status).toBe(201)
    const { image } = await json(res)
    expect(Object.keys(image).sort()).toEqual(IMAGE_KEYS)
    expect(image).toMatchObject({ page: 'genesis', category: 'office', alt: 'A sunny desk', caption: 'Morning light', isVisible: true, status: 'ready', width: 1200, height: 800 })
    expect(image.id).toMatch(/^[0-9A-Z]{26}$/)
    expect(widths(image.variants.avif)).toEqual([640, 1024, 1200])
    expect(widths(image.variants.webp)).toEqual([640, 1024, 1200])
    expect(image.src).toMatch(/\/1200\.jpg$/)
    for (const url of [image.src, ...image.variants.avif.map((v: { url: string }) => v.url), ...image.variants.webp.map((v: { url: string }) => v.url)]) {
      expect(url).toMatch(HASH_PATH)
    }
  })

  test('a large photo gets all four widths, the long edge capped at 2400, and a 1600 px JPEG', async () => {
    const image = await uploaded(await images.jpeg(3000, 2000))
    expect(widths(image.variants.avif)).toEqual([640, 1024, 1600, 2400])
    expect(image.src).toMatch(/\/1600\.jpg$/)
    expect([image.width, image.height]).toEqual([3000, 2000])
  })

  test('a portrait taller than 2400 px is capped on its long edge, widths that repeat are skipped', async () => {
    const image = await uploaded(await images.tallPortrait(1600, 3600))
    expect(widths(image.variants.webp)).toEqual([640, 1024, 1067])
    expect(image.src).toMatch(/\/1067\.jpg$/)
  })

  test('an image narrower than 640 px gets one AVIF and one WebP at its own width', async () => {
    const image = await uploaded(await images.narrow(400, 300))
    expect(widths(image.variants.avif)).toEqual([400])
    expect(widths(image.variants.webp)).toEqual([400])
    expect(image.src).toMatch(/\/400\.jpg$/)
  })

  test('EXIF rotation is applied before the dimensions are probed', async () => {
    const image = await uploaded(await images.jpegWithExifOrientation(6, 400, 200))
    expect([image.width, image.height]).toEqual([200, 400])
  })

  test.each([
    ['PNG with alpha', images.pngWithAlpha],
    ['CMYK JPEG', images.cmykJpeg],
    ['WebP', images.webp],
    ['AVIF', images.avif],
    ['AVIF under the mif1 brand', images.avifAsHeif],
    ['animated GIF', images.gif],
    ['TIFF', images.tiff],
    ['JPEG with a script appended', images.jpegWithPayload],
  ])('a %s is accepted', async (_label, make) => {
    const image = await uploaded(await make())
    expect(image.status).toBe('ready')
    expect(image.variants.avif.length).toBeGreaterThan(0)
  })

  test.each([
    ['SVG', images.svg],
    ['PDF', images.pdf],
    ['text', images.text],
    ['ELF executable', images.elf],
    ['truncated JPEG', images.truncatedJpeg],
    ['GIF/JPEG polyglot', images.gifJpegPolyglot],
    ['PNG/SVG polyglot', images.pngSvgPolyglot],
    ['HEIC', images.heic],
    ['image over 100 megapixels', images.huge],
  ])('a %s is 422 naming file, and leaves no row and no temp file', async (_label, make) => {
    const before = await rowCount()
    const res = await upload(await make(), { alt: 'Not an image' })
    expect(res.status).toBe(422)
    const body = await json(res)
    expect(body).toEqual({ error: expect.any(String), requestId: expect.any(String), fields: { file: expect.any(String) } })
    expect(await rowCount()).toBe(before)
    expect(tmpFiles()).toEqual([])
  })

  test('while the server drains for a shutdown, an upload is 503 with Retry-After and nothing is kept', async () => {
    const before = await rowCount()
    app.deps.lifecycle.draining = true
    try {
      const res = await upload(await images.jpeg(64, 48))
      expect(res.status).toBe(503)
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      expect((await json(res)).error).toEqual(expect.any(String))
    } finally {
      app.deps.lifecycle.draining = false
    }
    expect(await rowCount()).toBe(before)
  })

  test('an oversize file is 413 even when the other fields are missing too', async () => {
    const res = await app.fetch('/admin/media', { method: 'POST', headers: bearer(session), body: form({ file: new Blob([new Uint8Array(25 * 1024 * 1024 + 1)]) }) })
    expect(res.status).toBe(413)
  })

  test('an empty file is 422', async () => {
    expect((await upload(new Uint8Array())).status).toBe(422)
  })

  test('a declared body over 25 MB is 413 without reading it', async () => {
    // A raw request: a client library would not send a length its body does not have.
    const { port } = new URL(app.url)
    const answer = await new Promise<string>((resolve, reject) => {
      let received = ''
      Bun.connect({
        hostname: '127.0.0.1',
        port: Number(port),
        socket: {
          open(socket) {
            socket.write(
              `POST /admin/media HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${session.accessToken}\r\n` +
                `Content-Type: multipart/form-data; boundary=x\r\nContent-Length: ${26 * 1024 * 1024 + 1}\r\n\r\n--x\r\n`,
            )
          },
          data(socket, data) {
            received += data.toString()
            if (received.includes('\r\n\r\n')) {
              socket.end()
              resolve(received)
            }
          },
          error: (_socket, error) => reject(error),
          close: () => resolve(received),
        },
      }).catch(reject)
    })
    expect(answer).toStartWith('HTTP/1.1 413')
  })

  test('a streamed body that grows past the limit is 413 and nothing is kept', async () => {
    const before = await rowCount()
    const chunk = new Uint8Array(1024 * 1024)
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 27) controller.enqueue(chunk)
        else controller.close()
      },
    })
    const res = await app.fetch('/admin/media', {
      method: 'POST',
      headers: { ...bearer(session), 'content-type': 'multipart/form-data; boundary=----x' },
      body: stream,
    })
    expect(res.status).toBe(413)
    expect((await json(res)).error).toEqual(expect.any(String))
    expect(await rowCount()).toBe(before)
    expect(tmpFiles()).toEqual([])
  })

  test('a file of exactly 25 MB passes the size check (and is then judged by its content)', async () => {
    const bytes = new Uint8Array(25 * 1024 * 1024)
    bytes.set(await images.text())
    expect((await upload(bytes)).status).toBe(422)
  })

  test('a file one byte over 25 MB is 413', async () => {
    expect((await upload(new Uint8Array(25 * 1024 * 1024 + 1))).status).toBe(413)
  })

  test.each([
    ['no file', { file: undefined }, 'file'],
    ['a file field that is text', { file: 'not a file' }, 'file'],
    ['no page', { page: undefined }, 'page'],
    ['an unknown page', { page: 'lobby' }, 'page'],
    ['no alt', { alt: undefined }, 'alt'],
    ['an alt of spaces', { alt: '   ' }, 'alt'],
    ['an alt over 255', { alt: 'x'.repeat(256) }, 'alt'],
    ['a caption over 500', { caption: 'x'.repeat(501) }, 'caption'],
  ] as const)('%s is 400 naming %s', async (_label, override, field) => {
    const bytes = await images.jpeg(64, 48)
    const part = { file: new Blob([bytes]), page: 'genesis', alt: 'A desk', ...override } as Part
    const res = await app.fetch('/admin/media', { method: 'POST', headers: bearer(session), body: form(part) })
    expect(res.status).toBe(400)
    expect(Object.keys((await json(res)).fields)).toContain(field)
  })

  test('a body that is not multipart is 400', async () => {
    const res = await send(app, 'POST', '/admin/media', { page: 'genesis', alt: 'x' }, session)
    expect(res.status).toBe(400)
  })

  test('an unknown category is 422 naming category', async () => {
    const res = await upload(await images.jpeg(64, 48), { category: 'rooftop' })
    expect(res.status).toBe(422)
    expect(Object.keys((await json(res)).fields)).toEqual(['category'])
  })

  test('the client file name is recorded but never used for a stored file', async () => {
    const res = await app.fetch('/admin/media', {
      method: 'POST',
      headers: bearer(session),
      body: form({ file: new Blob([await images.jpeg(64, 48)]), name: '../../evil name.jpg', page: 'hive', alt: 'Named' }),
    })
    const { image } = await json(res)
    const row = await app.db.one<{ original_name: string; original_bytes: number }>(sql`SELECT original_name, original_bytes FROM media_images WHERE id = ${image.id}`)
    expect(row!.original_name).toBe('../../evil name.jpg')
    expect(Number(row!.original_bytes)).toBeGreaterThan(0)
    const all = [...new Bun.Glob('**/*').scanSync({ cwd: app.dir, dot: true })]
    expect(all.filter((p) => p.includes('evil'))).toEqual([])
  })

  test('new images go to the end of their page', async () => {
    const a = await uploaded(await images.jpeg(64, 48), { page: 'hive' })
    const b = await uploaded(await images.jpeg(66, 48), { page: 'hive' })
    expect(b.order).toBe(a.order + 1)
  })

  test('the same file uploaded twice to a page makes two images sharing one directory', async () => {
    const bytes = await images.jpeg(300, 200)
    const a = await uploaded(bytes)
    const b = await uploaded(bytes)
    expect(a.id).not.toBe(b.id)
    expect(a.src).toBe(b.src)
  })

  test('concurrent uploads are each answered 201 (processed one at a time)', async () => {
    const results = await Promise.all([1, 2, 3].map(async (n) => upload(await images.jpeg(100 + n, 80))))
    expect(results.map((r) => r.status)).toEqual([201, 201, 201])
    const orders = await Promise.all(results.map(async (r) => (await json(r)).image.order))
    expect(new Set(orders).size).toBe(3)
  })

  test('a failure after the row exists marks it failed, removes its files and says so with a 5xx', async () => {
    // A plain file where the page's media directory must go: the derivatives cannot be written.
    const own = await startApp()
    try {
      const ownSession = await login(own, (await createAdmin(own)).phone)
      mkdirSync(own.config.media.root, { recursive: true })
      writeFileSync(join(own.config.media.root, 'hive'), 'in the way')
      const res = await own.fetch('/admin/media', {
        method: 'POST',
        headers: bearer(ownSession),
        body: form({ file: new Blob([await images.jpeg(200, 100)]), page: 'hive', alt: 'Doomed' }),
      })
      expect(res.status).toBe(500)
      const body = await json(res)
      expect(body.error).toMatch(/not kept|could not/i)
      expect(JSON.stringify(body)).not.toMatch(/ENOTDIR|EEXIST|\/tmp\//)
      const rows = await own.db.query(sql`SELECT status FROM media_images`)
      expect(rows.map((r) => r.status)).toEqual(['failed'])
      expect(readdirSync(join(own.config.media.storageRoot, 'originals'))).toEqual([])
      const list = await json(await send(own, 'GET', '/admin/media?page=hive', undefined, ownSession))
      expect(list.images).toHaveLength(1)
      expect(list.images[0]).toMatchObject({ status: 'failed', src: null, variants: { avif: [], webp: [] } })
      rmSync(join(own.config.media.root, 'hive'))
    } finally {
      await own.destroy()
    }
  })
})

describe('admin media', () => {
  // Its own page would be shared with the upload tests, so this block uses a fresh app.
  let own: TestApp
  let s: LoggedIn
  let ids: string[]
  beforeAll(async () => {
    own = await startApp()
    s = await login(own, (await createAdmin(own)).phone)
    ids = []
    for (const [n, category] of ['office', 'meeting-room', undefined].entries()) {
      const res = await own.fetch('/admin/media', {
        method: 'POST',
        headers: bearer(s),
        body: form({ file: new Blob([await images.jpeg(120 + n, 90)]), page: 'genesis', alt: `Image ${n}`, category }),
      })
      ids.push((await json(res)).image.id)
    }
    await own.fetch('/admin/media', { method: 'POST', headers: bearer(s), body: form({ file: new Blob([await images.jpeg(90, 60)]), page: 'hive', alt: 'Other page' }) })
  })
  afterAll(() => own.destroy())
  const get = async (path: string) => {
    const res = await send(own, 'GET', path, undefined, s)
    return { status: res.status, body: await json(res) }
  }
  const listIds = async (query: string) => (await get(`/admin/media?${query}`)).body.images.map((i: { id: string }) => i.id)

  test('GET /admin/media/categories lists the categories as { id, slug, label }', async () => {
    const { status, body } = await get('/admin/media/categories')
    expect(status).toBe(200)
    expect(body.categories.map((c: { slug: string }) => c.slug)).toEqual(['office', 'function-hall', 'sharing-corner', 'event-space', 'meeting-room'])
    for (const c of body.categories) expect(Object.keys(c).sort()).toEqual(['id', 'label', 'slug'])
  })

  test('GET /admin/media lists a page in position order', async () => {
    expect(await listIds('page=genesis')).toEqual(ids)
  })

  test('filters by category and by visibility, hidden images included by default', async () => {
    expect(await listIds('page=genesis&category=office')).toEqual([ids[0]])
    expect(await listIds('page=genesis&category=nowhere')).toEqual([])
    await send(own, 'PATCH', `/admin/media/${ids[1]}/visibility`, { isVisible: false }, s)
    expect(await listIds('page=genesis&visible=0')).toEqual([ids[1]])
    expect(await listIds('page=genesis&visible=1')).toEqual([ids[0], ids[2]])
    expect(await listIds('page=genesis')).toEqual(ids)
    await send(own, 'PATCH', `/admin/media/${ids[1]}/visibility`, { isVisible: true }, s)
  })

  test.each(['', 'page=lobby', 'page=genesis&visible=yes'])('a bad query (%p) is 400', async (query) => {
    expect((await get(`/admin/media?${query}`)).status).toBe(400)
  })

  test('PATCH /admin/media/{id} changes alt, caption and category', async () => {
    const res = await send(own, 'PATCH', `/admin/media/${ids[2]}`, { alt: '  New alt  ', caption: 'A caption', category: 'event-space' }, s)
    expect(res.status).toBe(200)
    const { image } = await json(res)
    expect(Object.keys(image).sort()).toEqual(IMAGE_KEYS)
    expect(image).toMatchObject({ alt: 'New alt', caption: 'A caption', category: 'event-space' })
    const cleared = (await json(await send(own, 'PATCH', `/admin/media/${ids[2]}`, { caption: null, category: null }, s))).image
    expect(cleared).toMatchObject({ alt: 'New alt', caption: null, category: null })
  })

  test('PATCH with an unknown category is 422 and changes nothing', async () => {
    const res = await send(own, 'PATCH', `/admin/media/${ids[0]}`, { alt: 'Changed?', category: 'rooftop' }, s)
    expect(res.status).toBe(422)
    expect(Object.keys((await json(res)).fields)).toEqual(['category'])
    expect((await get('/admin/media?page=genesis')).body.images[0]).toMatchObject({ alt: 'Image 0', category: 'office' })
  })

  test.each([
    ['an empty alt', { alt: '' }],
    ['an alt over 255', { alt: 'x'.repeat(256) }],
    ['a caption over 500', { caption: 'x'.repeat(501) }],
    ['an alt that is a number', { alt: 5 }],
  ])('PATCH with %s is 400', async (_label, body) => {
    expect((await send(own, 'PATCH', `/admin/media/${ids[0]}`, body, s)).status).toBe(400)
  })

  test.each([['PATCH', ''], ['PATCH', '/visibility'], ['DELETE', '']])('%s %s of an unknown or malformed id is 404', async (method, suffix) => {
    const body = suffix ? { isVisible: true } : method === 'PATCH' ? { alt: 'x' } : undefined
    expect((await send(own, method, `/admin/media/${ulid()}${suffix}`, body, s)).status).toBe(404)
    expect((await send(own, method, `/admin/media/nope${suffix}`, body, s)).status).toBe(404)
  })

  test('visibility needs a boolean', async () => {
    expect((await send(own, 'PATCH', `/admin/media/${ids[0]}/visibility`, { isVisible: 'no' }, s)).status).toBe(400)
    const { image } = await json(await send(own, 'PATCH', `/admin/media/${ids[0]}/visibility`, { isVisible: false }, s))
    expect(image.isVisible).toBe(false)
    await send(own, 'PATCH', `/admin/media/${ids[0]}/visibility`, { isVisible: true }, s)
  })

  test('PATCH /admin/media/order rewrites every position of the page', async () => {
    const reversed = [...ids].reverse()
    const res = await send(own, 'PATCH', '/admin/media/order', { page: 'genesis', ids: reversed }, s)
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({ ok: true })
    const listed = (await get('/admin/media?page=genesis')).body.images
    expect(listed.map((i: { id: string }) => i.id)).toEqual(reversed)
    expect(listed.map((i: { order: number }) => i.order)).toEqual([0, 1, 2])
    await send(own, 'PATCH', '/admin/media/order', { page: 'genesis', ids }, s)
  })

  test.each([
    ['one missing', () => ids.slice(0, 2)],
    ['an unknown id', () => [...ids, ulid()]],
    ['a duplicate', () => [ids[0]!, ids[0]!, ids[1]!, ids[2]!]],
    ['a duplicate in place of one', () => [ids[0]!, ids[0]!, ids[1]!]],
    ['an id of the other page', () => [ids[0]!, ids[1]!, ids[2]!].slice(0, 2).concat([ulid()])],
    ['an empty list', () => []],
  ])('an order with %s is 422 and changes nothing', async (_label, list) => {
    const res = await send(own, 'PATCH', '/admin/media/order', { page: 'genesis', ids: list() }, s)
    expect(res.status).toBe(422)
    expect(await listIds('page=genesis')).toEqual(ids)
  })

  test('an order body of the wrong shape is 400', async () => {
    expect((await send(own, 'PATCH', '/admin/media/order', { page: 'lobby', ids }, s)).status).toBe(400)
    expect((await send(own, 'PATCH', '/admin/media/order', { page: 'genesis', ids: 'all' }, s)).status).toBe(400)
  })

  test('DELETE is 204, the image leaves the list at once, its files stay, and a second DELETE is 404', async () => {
    const res = await own.fetch('/admin/media', { method: 'POST', headers: bearer(s), body: form({ file: new Blob([await images.jpeg(150, 90)]), page: 'genesis', alt: 'Short-lived' }) })
    const { image } = await json(res)
    const file = join(own.config.media.root, new URL(image.src).pathname.replace(/^\/media\//, ''))
    expect(existsSync(file)).toBe(true)
    const del = await send(own, 'DELETE', `/admin/media/${image.id}`, undefined, s)
    expect(del.status).toBe(204)
    expect(await del.text()).toBe('')
    expect(await listIds('page=genesis')).toEqual(ids)
    expect(existsSync(file)).toBe(true)
    expect((await send(own, 'DELETE', `/admin/media/${image.id}`, undefined, s)).status).toBe(404)
    expect((await send(own, 'PATCH', `/admin/media/${image.id}`, { alt: 'back?' }, s)).status).toBe(404)
  })
})
