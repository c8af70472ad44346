/**
 * SERVE_MEDIA: the derivatives of a real upload served from MEDIA_ROOT at the path of
 * ASSET_BASE_URL, and every way of asking for something else answered 404. Bun itself resolves dot
 * segments and backslashes in the request target before the app sees it, so attacks that rely on the
 * raw target are sent over a plain TCP socket, not through fetch (whose URL parser would do the same).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { copyFileSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { sharp } from '../../lib/sharp.ts'
import { json, startApp, type TestApp } from '../../../test/harness.ts'
import { bearer, createAdmin, login } from '../../../test/factories.ts'
import { jpegWithExifOrientation } from '../../../test/images.ts'

const TYPES = { avif: 'image/avif', webp: 'image/webp', jpg: 'image/jpeg' } as const
/** What sharp calls each format when it reads the bytes back. */
const FORMATS = { avif: 'heif', webp: 'webp', jpg: 'jpeg' } as const

let app: TestApp & { env: Record<string, string> }
/** `genesis/<hash>`: the uploaded image's directory, relative to MEDIA_ROOT. */
let dir: string
let hash: string
/** Every variant as `{ path, width }`, the path relative to MEDIA_ROOT. */
let variants: { path: string; width: number }[]

beforeAll(async () => {
  app = await startApp({ env: { SERVE_MEDIA: 'true' } })
  const session = await login(app, (await createAdmin(app)).phone)
  const form = new FormData()
  // Stored sideways with EXIF orientation 6, a copyright, XMP and an ICC profile: 700 x 1000 upright.
  form.append('file', new File([await jpegWithExifOrientation(6, 1000, 700)], 'sideways.jpg', { type: 'image/jpeg' }))
  form.append('page', 'genesis')
  form.append('alt', 'Reception desk')
  const res = await app.fetch('/admin/media', { method: 'POST', headers: bearer(session), body: form })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${await res.text()}`)
  const { image } = await json(res)
  const base = 'https://cdn.test/media/'
  const refs: { url: string; width: number }[] = [...image.variants.avif, ...image.variants.webp, { url: image.src, width: 700 }]
  variants = refs.map((r) => ({ path: r.url.slice(base.length), width: r.width }))
  dir = variants[0]!.path.split('/').slice(0, 2).join('/')
  hash = dir.split('/')[1]!
}, 30_000)
afterAll(async () => {
  await app.destroy()
})

const mediaRoot = () => app.config.media.root
const storageRoot = () => app.config.media.storageRoot
const port = () => Number(new URL(app.url).port)

/** One GET with the request target exactly as given. */
function rawGet(target: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port(), '127.0.0.1', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`))
    const chunks: Buffer[] = []
    socket.on('data', (d: Buffer) => chunks.push(d))
    socket.on('error', reject)
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1')
      const [head = '', ...rest] = text.split('\r\n\r\n')
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const at = line.indexOf(':')
        headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim()
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') })
    })
  })
}

function expectNotFound(res: { status: number; contentType: string | null | undefined; body: string }) {
  expect(res.status).toBe(404)
  expect(res.contentType).toStartWith('application/json')
  expect(Object.keys(JSON.parse(res.body)).sort()).toEqual(['error', 'requestId'])
}
const viaFetch = async (path: string, target: TestApp = app) => {
  const res = await fetch(target.url + path)
  return { status: res.status, contentType: res.headers.get('content-type'), body: await res.text() }
}
const viaSocket = async (target: string) => {
  const res = await rawGet(target)
  return { status: res.status, contentType: res.headers['content-type'], body: res.body }
}

describe('serving the derivatives', () => {
  test('the upload has AVIF and WebP at 640 and 700 px and one JPEG', () => {
    expect(variants.map((v) => v.path.split('/')[2])).toEqual(['640.avif', '700.avif', '640.webp', '700.webp', '700.jpg'])
  })

  test('each variant URL is 200 with the content type of its format', async () => {
    for (const { path } of variants) {
      const res = await app.fetch(`/media/${path}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe(TYPES[path.split('.').pop() as keyof typeof TYPES])
      await res.arrayBuffer()
    }
  })

  test('each variant is cacheable for a year, immutable, and readable cross-origin', async () => {
    for (const { path } of variants) {
      const res = await app.fetch(`/media/${path}`)
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      expect(res.headers.get('cross-origin-resource-policy')).toBe('cross-origin')
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      await res.arrayBuffer()
    }
  })

  test('the bytes served are the file on disk', async () => {
    for (const { path } of variants) {
      const served = Buffer.from(await (await app.fetch(`/media/${path}`)).arrayBuffer())
      expect(served.equals(Buffer.from(await Bun.file(join(mediaRoot(), path)).arrayBuffer()))).toBe(true)
    }
  })

  test('each variant decodes to its format at its width, upright', async () => {
    for (const { path, width } of variants) {
      const meta = await sharp(Buffer.from(await (await app.fetch(`/media/${path}`)).arrayBuffer())).metadata()
      expect(meta.format).toBe(FORMATS[path.split('.').pop() as keyof typeof FORMATS])
      expect(meta.width).toBe(width)
      // Portrait: the EXIF rotation was applied before the metadata went.
      expect(meta.height!).toBeGreaterThan(meta.width!)
    }
  })

  test('no variant carries EXIF, an orientation, XMP or IPTC', async () => {
    for (const { path } of variants) {
      const meta = await sharp(Buffer.from(await (await app.fetch(`/media/${path}`)).arrayBuffer())).metadata()
      expect(meta.exif).toBeUndefined()
      expect(meta.orientation).toBeUndefined()
      expect(meta.xmp).toBeUndefined()
      expect(meta.iptc).toBeUndefined()
    }
  })
})

describe('misses are 404 in the JSON error envelope', () => {
  test('a file that does not exist', async () => {
    expectNotFound(await viaFetch(`/media/${dir}/9999.avif`))
    expectNotFound(await viaFetch(`/media/genesis/${'0'.repeat(64)}/640.avif`))
  })

  test('a directory, with or without a trailing slash', async () => {
    for (const path of ['/media/genesis/', `/media/${dir}/`, `/media/${dir}`, '/media/genesis', '/media/']) {
      expectNotFound(await viaFetch(path))
    }
  })

  test('a directory whose name has an image extension', async () => {
    mkdirSync(join(mediaRoot(), dir, 'folder.jpg'), { recursive: true })
    expectNotFound(await viaFetch(`/media/${dir}/folder.jpg`))
  })

  test('a file without a derivative’s extension', async () => {
    writeFileSync(join(mediaRoot(), dir, 'notes.txt'), 'not an image')
    writeFileSync(join(mediaRoot(), dir, 'page.html'), '<script>alert(1)</script>')
    expectNotFound(await viaFetch(`/media/${dir}/notes.txt`))
    expectNotFound(await viaFetch(`/media/${dir}/page.html`))
  })

  test('a temporary file left by an interrupted encode', async () => {
    writeFileSync(join(mediaRoot(), dir, '.640.avif.abc123.tmp'), 'half an image')
    expectNotFound(await viaFetch(`/media/${dir}/.640.avif.abc123.tmp`))
  })
})

describe('nothing outside MEDIA_ROOT is reachable', () => {
  /** The private original of the upload, which must never be served. */
  const original = () => readdirSync(join(storageRoot(), 'originals')).find((name) => name.startsWith(hash))!

  test('the original exists in STORAGE_ROOT/originals (so the attacks below aim at a real file)', () => {
    expect(original()).toBe(`${hash}.jpg`)
  })

  test.each([
    ['dot segments', (o: string) => `/media/../storage/originals/${o}`],
    ['dot segments from a page directory', (o: string) => `/media/genesis/../../storage/originals/${o}`],
    ['percent-encoded dot segments', (o: string) => `/media/%2e%2e/storage/originals/${o}`],
    ['mixed-case encoded dot segments', (o: string) => `/media/genesis/%2E%2e/.%2E/storage/originals/${o}`],
    ['encoded slashes', (o: string) => `/media/..%2fstorage%2foriginals%2f${o}`],
    ['encoded slashes from a page directory', (o: string) => `/media/genesis/..%2F..%2Fstorage%2Foriginals%2F${o}`],
    ['backslashes', (o: string) => `/media/genesis\\..\\..\\storage\\originals\\${o}`],
    ['encoded backslashes', (o: string) => `/media/genesis%5c..%5c..%5cstorage%5coriginals%5c${o}`],
    ['an absolute path', (o: string) => `/media/${join(storageRoot(), 'originals', o)}`],
    ['the storage path itself', (o: string) => `/storage/originals/${o}`],
  ])('the original cannot be fetched through %s', async (_label, target) => {
    const res = await viaSocket(target(original()))
    expectNotFound(res)
  })

  test.each([
    ['dot segments', '/media/../../../../../../etc/passwd'],
    ['encoded dot segments', '/media/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd'],
    ['encoded slashes', '/media/..%2f..%2f..%2f..%2fetc/passwd'],
    ['an absolute path', '/media//etc/passwd'],
    ['backslashes', '/media/..\\..\\..\\..\\etc\\passwd'],
  ])('/etc/passwd cannot be fetched through %s', async (_label, target) => {
    const res = await viaSocket(target)
    expectNotFound(res)
    expect(res.body).not.toContain('root:')
  })

  test('fetch’s own URL normalisation of the same attacks ends in 404 too', async () => {
    for (const path of ['/media/../storage/originals/x.jpg', '/media/%2e%2e/%2e%2e/etc/passwd', '/media/genesis\\..\\..\\etc\\passwd']) {
      expectNotFound(await viaFetch(path))
    }
  })

  test('an encoded slash is refused even where it would name a real file', async () => {
    expectNotFound(await viaFetch(`/media/genesis%2f${hash}%2f640.avif`))
    expectNotFound(await viaFetch(`/media/genesis/${hash}%2F640.avif`))
    expectNotFound(await viaFetch(`/media/genesis%5c${hash}%5c640.avif`))
  })

  test('a NUL byte is refused', async () => {
    expectNotFound(await viaFetch(`/media/${dir}/640.avif%00`))
    expectNotFound(await viaFetch(`/media/${dir}/640.avif%00.jpg`))
    expectNotFound(await viaFetch(`/media/${dir}%00/640.avif`))
  })

  test('a symlink inside MEDIA_ROOT to a file outside it', async () => {
    const outside = join(app.dir, 'outside.jpg')
    copyFileSync(join(mediaRoot(), `${dir}/700.jpg`), outside)
    symlinkSync(outside, join(mediaRoot(), dir, 'escape.jpg'))
    expect((await viaFetch(`/media/${dir}/700.jpg`)).status).toBe(200)
    expectNotFound(await viaFetch(`/media/${dir}/escape.jpg`))
  })

  test('a symlinked directory inside MEDIA_ROOT that points at the originals', async () => {
    symlinkSync(join(storageRoot(), 'originals'), join(mediaRoot(), 'genesis', 'originals'))
    expectNotFound(await viaFetch(`/media/genesis/originals/${original()}`))
  })
})

describe('SERVE_MEDIA=false', () => {
  test('the media path is 404 even for a file that exists', async () => {
    const off = await startApp({ reuse: { dir: app.dir, env: { ...app.env, SERVE_MEDIA: 'false' } }, migrate: false })
    try {
      expectNotFound(await viaFetch(`/media/${variants[0]!.path}`, off))
    } finally {
      await off.stop()
    }
    expect((await app.fetch(`/media/${variants[0]!.path}`)).status).toBe(200)
  })
})
