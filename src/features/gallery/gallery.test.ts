/**
 * GET /spaces/{slug}/gallery through HTTP, on images uploaded through POST /admin/media (real
 * files, real database). Only the clock is faked, so that `updatedAt` is predictable.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sql from 'sql-template-tag'
import { ulid } from 'ulid'
import { fixedClock } from '../../lib/clock.ts'
import { GALLERY_CACHE_MS } from './routes.ts'
import { json, startApp, type TestApp } from '../../../test/harness.ts'
import { bearer, createAdmin, login, send, type LoggedIn } from '../../../test/factories.ts'
import { jpeg, photo } from '../../../test/images.ts'

const BODY_KEYS = ['images', 'slug', 'updatedAt']
const IMAGE_KEYS = ['alt', 'height', 'id', 'order', 'src', 'variants', 'width']
const EPOCH = '1970-01-01T00:00:00.000Z'
const URL_SHAPE = /^https:\/\/cdn\.test\/media\/(genesis|hive)\/([0-9a-f]{64})\/(\d+)\.(avif|webp|jpg)$/

interface Ref {
  url: string
  width: number
}
interface Shown {
  id: string
  alt: string
  caption?: string
  order: number
  width: number
  height: number
  src: string
  variants: { avif: Ref[]; webp: Ref[] }
}

const clock = fixedClock(new Date('2026-11-02T09:00:00.000Z'))
let app: TestApp
let session: LoggedIn
/** Uploaded to genesis in this order: positions 0 to 3. */
let office: { id: string }
let meeting: { id: string }
let hall: { id: string }
let wide: { id: string; width: number; height: number }

async function upload(fields: Record<string, string>, bytes: Uint8Array, target: TestApp = app, as: LoggedIn = session) {
  const form = new FormData()
  form.append('file', new File([bytes], 'photo.jpg', { type: 'image/jpeg' }))
  for (const [key, value] of Object.entries(fields)) form.append(key, value)
  const res = await target.fetch('/admin/media', { method: 'POST', headers: bearer(as), body: form })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${await res.text()}`)
  return (await json(res)).image
}

async function gallery(path = '/spaces/genesis/gallery', headers: Record<string, string> = {}) {
  const res = await app.fetch(path, { headers })
  return { res, body: res.status === 200 ? await json(res) : undefined }
}
const ids = (body: { images: Shown[] }) => body.images.map((i) => i.id)
const shown = async (id: string) => (await gallery()).body.images.find((i: Shown) => i.id === id) as Shown | undefined
const adminIds = async (page: string): Promise<string[]> =>
  (await json(await send(app, 'GET', `/admin/media?page=${page}`, undefined, session))).images.map((i: { id: string }) => i.id)
const updatedAtOf = async (id: string) => {
  const row = await app.db.one<{ updated_at: unknown }>(sql`SELECT updated_at FROM media_images WHERE id = ${id}`)
  return new Date(row!.updated_at as string).toISOString()
}
/**
 * Moves the clock on, so that the next change has a timestamp of its own; far less than the
 * gallery cache's lifetime, so changes made through the API are seen to show at once.
 */
const tick = () => clock.advance(10)
/** A change made behind the app's back (a hand edit, another process) shows once the cache's bound has passed. */
const afterCacheBound = () => clock.advance(GALLERY_CACHE_MS)

beforeAll(async () => {
  app = await startApp({ clock })
  session = await login(app, (await createAdmin(app)).phone)
  office = await upload({ page: 'genesis', alt: 'Open-plan office', category: 'office', caption: 'Desks by the window' }, await photo(700, 500, 90, 1))
  tick()
  meeting = await upload({ page: 'genesis', alt: 'Meeting room', category: 'meeting-room' }, await jpeg(700, 500))
  tick()
  hall = await upload({ page: 'genesis', alt: 'Function hall', category: 'function-hall' }, await photo(700, 500, 90, 2))
  tick()
  // Wider than the 2400 px cap: its largest variant is smaller than the original.
  wide = await upload({ page: 'genesis', alt: 'Panorama of the event space', category: 'event-space' }, await jpeg(2600, 300))
}, 30_000)
afterAll(async () => {
  await app.destroy()
})

describe('shape', () => {
  test('the body has exactly slug, updatedAt and images', async () => {
    const { res, body } = await gallery()
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('application/json')
    expect(Object.keys(body).sort()).toEqual(BODY_KEYS)
    expect(body.slug).toBe('genesis')
    expect(body.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  })

  test('each image has exactly the documented keys, and variants exactly avif and webp of { url, width }', async () => {
    const { body } = await gallery()
    expect(body.images.length).toBe(4)
    for (const image of body.images as Shown[]) {
      expect(Object.keys(image).sort()).toEqual(image.id === office.id ? [...IMAGE_KEYS, 'caption'].sort() : IMAGE_KEYS)
      expect(Object.keys(image.variants).sort()).toEqual(['avif', 'webp'])
      for (const ref of [...image.variants.avif, ...image.variants.webp]) expect(Object.keys(ref).sort()).toEqual(['url', 'width'])
    }
  })

  test('caption is present when set and omitted when absent', async () => {
    expect((await shown(office.id))!.caption).toBe('Desks by the window')
    expect(await shown(meeting.id)).not.toHaveProperty('caption')
  })

  test('a caption removed by the admin is omitted again, not null or empty', async () => {
    tick()
    expect((await send(app, 'PATCH', `/admin/media/${hall.id}`, { caption: 'For 80 guests' }, session)).status).toBe(200)
    expect((await shown(hall.id))!.caption).toBe('For 80 guests')
    tick()
    expect((await send(app, 'PATCH', `/admin/media/${hall.id}`, { caption: null }, session)).status).toBe(200)
    expect(await shown(hall.id)).not.toHaveProperty('caption')
  })

  test('id, alt and order are the image’s own', async () => {
    expect(await shown(meeting.id)).toMatchObject({ id: meeting.id, alt: 'Meeting room', order: expect.any(Number) })
  })
})

describe('URLs and sizes', () => {
  test('every URL is absolute under ASSET_BASE_URL with the path {page}/{content hash}/{width}.{ext}', async () => {
    const { body } = await gallery()
    for (const image of body.images as Shown[]) {
      const hashes = new Set<string>()
      for (const [format, list] of Object.entries(image.variants)) {
        for (const ref of list) {
          const m = URL_SHAPE.exec(ref.url)
          expect(m, ref.url).not.toBeNull()
          expect(m![1]).toBe('genesis')
          expect(Number(m![3])).toBe(ref.width)
          expect(m![4]).toBe(format)
          hashes.add(m![2]!)
        }
      }
      const src = URL_SHAPE.exec(image.src)
      expect(src, image.src).not.toBeNull()
      hashes.add(src![2]!)
      // One image, one content-addressed directory.
      expect(hashes.size).toBe(1)
    }
  })

  test('src is the JPEG primary', async () => {
    const image = (await shown(office.id))!
    expect(image.src).toBe(`https://cdn.test/media/genesis/${URL_SHAPE.exec(image.src)![2]}/700.jpg`)
    expect((await shown(wide.id))!.src).toEndWith('/1600.jpg')
  })

  test('avif and webp lists are sorted by width', async () => {
    const image = (await shown(wide.id))!
    expect(image.variants.avif.map((v) => v.width)).toEqual([640, 1024, 1600, 2400])
    expect(image.variants.webp.map((v) => v.width)).toEqual([640, 1024, 1600, 2400])
    expect((await shown(office.id))!.variants.avif.map((v) => v.width)).toEqual([640, 700])
  })

  test('width and height are those of the largest variant, not of the original', async () => {
    expect(wide).toMatchObject({ width: 2600, height: 300 })
    expect(await shown(wide.id)).toMatchObject({ width: 2400, height: 277 })
    expect(await shown(office.id)).toMatchObject({ width: 700, height: 500 })
  })
})

describe('which images, in which order', () => {
  test('images come in position order and order is the position', async () => {
    const { body } = await gallery()
    const orders = body.images.map((i: Shown) => i.order)
    expect(orders).toEqual([...orders].sort((a: number, b: number) => a - b))
    expect(ids(body)).toEqual(await adminIds('genesis'))
  })

  test('PATCH /admin/media/order changes the order the gallery shows', async () => {
    const before = await adminIds('genesis')
    const reversed = [...before].reverse()
    tick()
    expect((await send(app, 'PATCH', '/admin/media/order', { page: 'genesis', ids: reversed }, session)).status).toBe(200)
    const { body } = await gallery()
    expect(ids(body)).toEqual(reversed)
    expect(body.images.map((i: Shown) => i.order)).toEqual(reversed.map((_, n) => n))
    tick()
    expect((await send(app, 'PATCH', '/admin/media/order', { page: 'genesis', ids: before }, session)).status).toBe(200)
    expect(ids((await gallery()).body)).toEqual(before)
  })

  test('an image made invisible leaves the gallery at once and comes back when made visible', async () => {
    expect(ids((await gallery()).body)).toContain(meeting.id)
    expect((await send(app, 'PATCH', `/admin/media/${meeting.id}/visibility`, { isVisible: false }, session)).status).toBe(200)
    expect(ids((await gallery()).body)).not.toContain(meeting.id)
    expect(await adminIds('genesis')).toContain(meeting.id)
    expect((await send(app, 'PATCH', `/admin/media/${meeting.id}/visibility`, { isVisible: true }, session)).status).toBe(200)
    expect(ids((await gallery()).body)).toContain(meeting.id)
  })

  test.each(['processing', 'failed'])('an image whose status is %s is not shown', async (status) => {
    await app.db.execute(sql`UPDATE media_images SET status = ${status} WHERE id = ${hall.id}`)
    afterCacheBound()
    try {
      expect(ids((await gallery()).body)).not.toContain(hall.id)
    } finally {
      await app.db.execute(sql`UPDATE media_images SET status = 'ready' WHERE id = ${hall.id}`)
      afterCacheBound()
    }
    expect(ids((await gallery()).body)).toContain(hall.id)
  })

  test('a deleted image leaves the gallery at once', async () => {
    const doomed = await upload({ page: 'genesis', alt: 'Soon gone' }, await photo(700, 500, 90, 3))
    expect(ids((await gallery()).body)).toContain(doomed.id)
    expect((await send(app, 'DELETE', `/admin/media/${doomed.id}`, undefined, session)).status).toBe(204)
    expect(ids((await gallery()).body)).not.toContain(doomed.id)
  })

  test('?category= shows only the images of that category', async () => {
    const { res, body } = await gallery('/spaces/genesis/gallery?category=office')
    expect(res.status).toBe(200)
    expect(ids(body)).toEqual([office.id])
  })

  test.each([
    ['an unknown slug', 'no-such-category'],
    ['a slug longer than any category’s', 'x'.repeat(65)],
  ])('?category= with %s is 200 with no images', async (_label, slug) => {
    const { res, body } = await gallery(`/spaces/genesis/gallery?category=${slug}`)
    expect(res.status).toBe(200)
    expect(body.images).toEqual([])
    expect(body.slug).toBe('genesis')
  })

  test('an unknown space is 404 in the JSON error envelope', async () => {
    const res = await app.fetch('/spaces/nowhere/gallery')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toStartWith('application/json')
    const body = await json(res)
    expect(Object.keys(body).sort()).toEqual(['error', 'requestId'])
    expect(body.requestId).toBe(res.headers.get('x-request-id'))
  })
})

describe('updatedAt', () => {
  test('is the greatest updated_at of the images returned', async () => {
    tick()
    expect((await send(app, 'PATCH', `/admin/media/${office.id}`, { alt: 'Open-plan office, morning' }, session)).status).toBe(200)
    const { body } = await gallery()
    expect(body.updatedAt).toBe(clock.now().toISOString())
    const greatest = Math.max(...(await Promise.all(ids(body).map(async (id) => Date.parse(await updatedAtOf(id))))))
    expect(body.updatedAt).toBe(new Date(greatest).toISOString())
  })

  test('ignores images that are not returned, however recently they changed', async () => {
    const { body: before } = await gallery('/spaces/genesis/gallery?category=office')
    tick()
    expect((await send(app, 'PATCH', `/admin/media/${meeting.id}`, { alt: 'Meeting room, ten seats' }, session)).status).toBe(200)
    const { body: after } = await gallery('/spaces/genesis/gallery?category=office')
    expect(after.updatedAt).toBe(before.updatedAt)
    expect(after.updatedAt).toBe(await updatedAtOf(office.id))
  })

  test('with no image returned, is the latest change to any image of the page, a deleted one included', async () => {
    const gone = await upload({ page: 'genesis', alt: 'Deleted last' }, await photo(700, 500, 90, 4))
    tick()
    expect((await send(app, 'DELETE', `/admin/media/${gone.id}`, undefined, session)).status).toBe(204)
    const { body } = await gallery('/spaces/genesis/gallery?category=sharing-corner')
    expect(body).toEqual({ slug: 'genesis', updatedAt: clock.now().toISOString(), images: [] })
  })

  test('a space that never had an image has updatedAt 1970-01-01T00:00:00.000Z and no images', async () => {
    const fresh = await startApp()
    try {
      for (const slug of ['genesis', 'hive']) {
        const res = await fresh.fetch(`/spaces/${slug}/gallery`)
        expect(res.status).toBe(200)
        expect(await json(res)).toEqual({ slug, updatedAt: EPOCH, images: [] })
      }
    } finally {
      await fresh.destroy()
    }
  })
})

describe('freshness', () => {
  test('a change through the admin API shows in the next response, however soon', async () => {
    const before = (await gallery()).res.headers.get('etag')
    expect((await send(app, 'PATCH', `/admin/media/${meeting.id}`, { alt: 'Meeting room, with a view' }, session)).status).toBe(200)
    const { res } = await gallery()
    expect((await shown(meeting.id))!.alt).toBe('Meeting room, with a view')
    expect(res.headers.get('etag')).not.toBe(before)
  })

  test('a change made directly in the database (another process) shows once the cache bound has passed', async () => {
    await gallery()
    await app.db.execute(sql`UPDATE media_images SET alt = 'Meeting room, edited by hand' WHERE id = ${meeting.id}`)
    afterCacheBound()
    expect((await shown(meeting.id))!.alt).toBe('Meeting room, edited by hand')
  })
})

describe('HTTP caching', () => {
  test('Cache-Control is public, max-age=300, stale-while-revalidate=86400', async () => {
    const { res } = await gallery()
    expect(res.headers.get('cache-control')).toBe('public, max-age=300, stale-while-revalidate=86400')
  })

  test('the ETag is strong', async () => {
    const etag = (await gallery()).res.headers.get('etag')
    expect(etag).toMatch(/^"[^"]+"$/)
  })

  test('If-None-Match with the current ETag is 304 with an empty body', async () => {
    const etag = (await gallery()).res.headers.get('etag')!
    const res = await app.fetch('/spaces/genesis/gallery', { headers: { 'if-none-match': etag } })
    expect(res.status).toBe(304)
    expect(await res.text()).toBe('')
    expect(res.headers.get('etag')).toBe(etag)
    expect(res.headers.get('cache-control')).toBe('public, max-age=300, stale-while-revalidate=86400')
  })

  test('the same gallery twice has the same ETag', async () => {
    expect((await gallery()).res.headers.get('etag')).toBe((await gallery()).res.headers.get('etag'))
  })

  test('a changed gallery has a different ETag, and the old one no longer gives 304', async () => {
    const old = (await gallery()).res.headers.get('etag')!
    tick()
    expect((await send(app, 'PATCH', `/admin/media/${hall.id}`, { alt: 'Function hall, set for dinner' }, session)).status).toBe(200)
    const res = await app.fetch('/spaces/genesis/gallery', { headers: { 'if-none-match': old } })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).not.toBe(old)
  })

  test('a filtered gallery has its own ETag', async () => {
    const all = (await gallery()).res.headers.get('etag')
    const filtered = (await gallery('/spaces/genesis/gallery?category=office')).res.headers.get('etag')
    expect(filtered).not.toBe(all)
  })
})

describe('database reads', () => {
  /** Statements on the media tables during one request (background workers touch other tables). */
  async function countedQueries(path: string): Promise<{ n: number; body: { images: Shown[] } }> {
    const db = app.db
    const { query, one } = db
    let n = 0
    const count = (q: { sql: string }) => {
      if (/media_/.test(q.sql)) n++
    }
    db.query = ((q: { sql: string }) => (count(q), query.call(db, q as never))) as never
    db.one = ((q: { sql: string }) => (count(q), one.call(db, q as never))) as never
    try {
      const res = await app.fetch(path)
      expect(res.status).toBe(200)
      return { n, body: await json(res) }
    } finally {
      db.query = query
      db.one = one
    }
  }

  test('the gallery makes at most two database queries, whatever the number of images', async () => {
    // 30 ready images on hive, sharing the files of one upload: rows are all the read looks at.
    const model = await upload({ page: 'hive', alt: 'Hive lounge' }, await jpeg(700, 500))
    const variants = await app.db.query(sql`SELECT format, width, height, bytes, path, is_primary FROM media_variants WHERE image_id = ${model.id}`)
    const source = (await app.db.one(sql`SELECT content_hash FROM media_images WHERE id = ${model.id}`))!
    for (let n = 1; n < 30; n++) {
      const id = ulid()
      await app.db.execute(sql`
        INSERT INTO media_images (id, page, alt, position, is_visible, status, width, height, content_hash, original_name, original_bytes, created_at, updated_at)
        VALUES (${id}, 'hive', ${`Hive ${n}`}, ${n}, ${1}, 'ready', 700, 500, ${source.content_hash as string}, 'photo.jpg', 1000, ${clock.now()}, ${clock.now()})`)
      for (const v of variants) {
        await app.db.execute(sql`
          INSERT INTO media_variants (image_id, format, width, height, bytes, path, is_primary)
          VALUES (${id}, ${v.format as string}, ${Number(v.width)}, ${Number(v.height)}, ${Number(v.bytes)}, ${v.path as string}, ${Number(v.is_primary)})`)
      }
    }
    afterCacheBound()
    const many = await countedQueries('/spaces/hive/gallery')
    expect(many.body.images.length).toBe(30)
    expect(many.n).toBeGreaterThan(0) // the count itself works
    expect(many.n).toBeLessThanOrEqual(2)
    afterCacheBound()
    const few = await countedQueries('/spaces/genesis/gallery?category=office')
    expect(few.body.images.length).toBe(1)
    expect(few.n).toBeGreaterThan(0)
    expect(few.n).toBeLessThanOrEqual(2)
  })

  test('a cached gallery is read from the database once, and a flood of made-up filters cannot push it out', async () => {
    afterCacheBound()
    expect((await countedQueries('/spaces/genesis/gallery')).n).toBeGreaterThan(0)
    for (let n = 0; n < 40; n++) await countedQueries(`/spaces/genesis/gallery?category=junk${n}`)
    expect((await countedQueries('/spaces/genesis/gallery')).n).toBe(0)
    afterCacheBound()
    expect((await countedQueries('/spaces/genesis/gallery')).n).toBeGreaterThan(0)
    expect((await countedQueries('/spaces/genesis/gallery')).n).toBe(0)
  })

  test('an empty gallery makes at most two database queries too', async () => {
    afterCacheBound()
    const { n, body } = await countedQueries('/spaces/genesis/gallery?category=sharing-corner')
    expect(body.images).toEqual([])
    expect(n).toBeGreaterThan(0)
    expect(n).toBeLessThanOrEqual(2)
  })
})

describe('CORS', () => {
  test.each(['https://site.test', 'http://localhost:4321'])('the public origin %s is echoed in Access-Control-Allow-Origin', async (origin) => {
    const { res } = await gallery('/spaces/genesis/gallery', { origin })
    expect(res.headers.get('access-control-allow-origin')).toBe(origin)
    expect(res.headers.get('access-control-allow-credentials')).toBeNull()
    expect(res.headers.get('vary')).toContain('Origin')
  })

  test('a foreign origin gets no Access-Control-Allow-Origin, and the admin origin is foreign here', async () => {
    for (const origin of ['https://evil.test', 'https://admin.test']) {
      const { res } = await gallery('/spaces/genesis/gallery', { origin })
      expect(res.status).toBe(200)
      expect(res.headers.get('access-control-allow-origin')).toBeNull()
    }
  })

  test('the ETag is exposed to an allowed origin', async () => {
    const { res } = await gallery('/spaces/genesis/gallery', { origin: 'https://site.test' })
    expect(res.headers.get('access-control-expose-headers')).toContain('ETag')
  })
})
