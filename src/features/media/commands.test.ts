/**
 * The `gc` and `reprocess` commands (operations.md; decisions 12 and 15, P41, P42) on real uploads:
 * driven directly with the app's deps and a fixed clock, and through the command line as a process.
 * File ages are set with utimes relative to the clock the code under test reads.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import mysql from 'mysql2/promise'
import sql from 'sql-template-tag'
import { ulid } from 'ulid'
import { sharp } from '../../lib/sharp.ts'
import { fixedClock } from '../../lib/clock.ts'
import { json, mysqlServer, startApp, type TestApp } from '../../../test/harness.ts'
import { bearer, createAdmin, login, send, type LoggedIn } from '../../../test/factories.ts'
import { jpeg } from '../../../test/images.ts'
import { GALLERY_CACHE_MS } from '../gallery/routes.ts'
import { collectGarbage, GRACE_MS } from './gc.ts'
import { reprocessAll } from './reprocess.ts'

const DAY = 24 * 60 * 60_000
const MAIN = resolve(import.meta.dir, '../../main.ts')

type Started = TestApp & { env: Record<string, string> }
type Clock = ReturnType<typeof fixedClock>
interface Uploaded {
  id: string
  page: string
  hash: string
  /** `${page}/${hash}`, relative to MEDIA_ROOT. */
  dir: string
}

/**
 * Every image gets its own content (a gradient of its own size) unless a test wants it shared.
 * Narrower than 640 px, so each has one AVIF, one WebP and one JPEG (decision 11): quick to redo.
 */
let size = 400
const nextImage = () => jpeg(size++, 300)

const sessions = new Map<TestApp, { phone: string; session?: LoggedIn; at: number }>()
/** An admin session on the app, signed in again once its clock has moved on. */
async function sessionOf(app: TestApp): Promise<LoggedIn> {
  let known = sessions.get(app)
  if (!known) sessions.set(app, (known = { phone: (await createAdmin(app)).phone, at: 0 }))
  const now = app.deps.clock.now().getTime()
  if (!known.session || now - known.at > 60_000) Object.assign(known, { session: await login(app, known.phone), at: now })
  return known.session!
}

async function upload(app: TestApp, bytes: Uint8Array, page = 'genesis'): Promise<Uploaded> {
  const session = await sessionOf(app)
  const form = new FormData()
  form.append('file', new File([bytes], 'photo.jpg', { type: 'image/jpeg' }))
  form.append('page', page)
  form.append('alt', 'A photo')
  const res = await app.fetch('/admin/media', { method: 'POST', headers: bearer(session), body: form })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${await res.text()}`)
  const { image } = await json(res)
  const hash = /\/([0-9a-f]{64})\//.exec(image.src)![1]!
  return { id: image.id, page, hash, dir: `${page}/${hash}` }
}

async function remove(app: TestApp, id: string) {
  const session = await sessionOf(app)
  const res = await send(app, 'DELETE', `/admin/media/${id}`, undefined, session)
  if (res.status !== 204) throw new Error(`delete failed: ${res.status}`)
}

const media = (app: TestApp, path = '') => join(app.config.media.root, path)
const storage = (app: TestApp, path = '') => join(app.config.media.storageRoot, path)
const original = (app: TestApp, hash: string) => storage(app, `originals/${hash}.jpg`)
const filesIn = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : [])
const imageRow = (app: TestApp, id: string) => app.db.one<{ status: string }>(sql`SELECT status FROM media_images WHERE id = ${id}`)
const variantRows = (app: TestApp, id: string) =>
  app.db.query<{ id: number; format: string; width: number; height: number; bytes: number; path: string }>(
    sql`SELECT id, format, width, height, bytes, path FROM media_variants WHERE image_id = ${id} ORDER BY path`,
  )

/** Sets a file's or directory's modification time to `ms` before the clock's now. */
function age(path: string, clock: { now(): Date }, ms: number) {
  const at = new Date(clock.now().getTime() - ms)
  utimesSync(path, at, at)
}

/** A directory no row references, holding one file, at the given age. */
function strayDir(app: TestApp, clock: { now(): Date }, ms: number): string {
  const hash = new Bun.CryptoHasher('sha256').update(ulid()).digest('hex')
  const dir = media(app, `genesis/${hash}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, '640.avif'), 'left behind')
  age(join(dir, '640.avif'), clock, ms)
  age(dir, clock, ms)
  return `genesis/${hash}`
}

/** Runs the command line against the app's database and files. */
function cli(app: Started, ...args: string[]) {
  const res = Bun.spawnSync([process.execPath, MAIN, ...args], {
    cwd: app.dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? app.dir, ...app.env, LOG_LEVEL: 'warn' },
    stdout: 'pipe',
    stderr: 'pipe',
    timeout: 60_000,
  })
  return { code: res.exitCode, stdout: res.stdout.toString(), stderr: res.stderr.toString() }
}

const sha256 = (path: string) => new Bun.CryptoHasher('sha256').update(readFileSync(path)).digest('hex')
const names = (rows: { path: string }[]) => rows.map((r) => r.path.split('/').pop()!).sort()

describe('gc', () => {
  let app: Started
  let clock: Clock
  const gc = (dryRun = false) => collectGarbage(app.deps, { dryRun })

  beforeAll(async () => {
    clock = fixedClock(new Date())
    app = await startApp({ clock })
  }, 30_000)
  afterAll(async () => {
    await app.destroy()
  })

  describe('retention', () => {
    let expired: Uploaded
    let retained: Uploaded
    let report: Awaited<ReturnType<typeof gc>>

    beforeAll(async () => {
      expired = await upload(app, await nextImage())
      retained = await upload(app, await nextImage())
      await remove(app, expired.id)
      clock.advance(2 * DAY)
      await remove(app, retained.id)
      clock.advance(29 * DAY) // expired: deleted 31 days ago; retained: 29 days ago
      report = await gc()
    }, 30_000)

    test('an image soft-deleted 31 days ago is hard-deleted with its variant rows', async () => {
      expect(report.imagesDeleted).toContain(expired.id)
      expect(await imageRow(app, expired.id)).toBeUndefined()
      expect(await variantRows(app, expired.id)).toEqual([])
    })

    test('its derivative directory and its original are removed', () => {
      expect(existsSync(media(app, expired.dir))).toBe(false)
      expect(existsSync(original(app, expired.hash))).toBe(false)
      expect(report.removed).toContain(`${expired.dir}/`)
      expect(report.removed).toContain(`originals/${expired.hash}.jpg`)
    })

    test('an image soft-deleted 29 days ago keeps its rows, directory and original', async () => {
      expect(report.imagesDeleted).not.toContain(retained.id)
      expect(await imageRow(app, retained.id)).toBeDefined()
      const rows = await variantRows(app, retained.id)
      expect(rows.length).toBe(3)
      expect(filesIn(media(app, retained.dir))).toEqual(names(rows))
      expect(existsSync(original(app, retained.hash))).toBe(true)
    })
  })

  describe('content shared by two images (decision 12)', () => {
    test('the same file uploaded twice to one page shares one directory', async () => {
      const bytes = await nextImage()
      const first = await upload(app, bytes)
      const second = await upload(app, bytes)
      expect(second.dir).toBe(first.dir)
      expect((await variantRows(app, second.id)).map((v) => v.path)).toEqual((await variantRows(app, first.id)).map((v) => v.path))
    })

    test('an expired image’s directory stays while another row references it, and goes with the last', async () => {
      const bytes = await nextImage()
      const kept = await upload(app, bytes)
      const gone = await upload(app, bytes)
      await remove(app, gone.id)
      clock.advance(31 * DAY)
      const report = await gc()
      expect(report.imagesDeleted).toContain(gone.id)
      expect(await imageRow(app, gone.id)).toBeUndefined()
      expect(report.removed.filter((p) => p.startsWith(kept.dir))).toEqual([])
      expect(filesIn(media(app, kept.dir))).toEqual(names(await variantRows(app, kept.id)))
      expect(existsSync(original(app, kept.hash))).toBe(true)
      const gallery = await json(await app.fetch('/spaces/genesis/gallery'))
      expect(gallery.images.map((i: { id: string }) => i.id)).toContain(kept.id)

      await remove(app, kept.id)
      clock.advance(31 * DAY)
      expect((await gc()).removed).toContain(`${kept.dir}/`)
      expect(existsSync(media(app, kept.dir))).toBe(false)
      expect(existsSync(original(app, kept.hash))).toBe(false)
    })

    test('the original stays while an image on the other page uses it', async () => {
      const bytes = await nextImage()
      const onGenesis = await upload(app, bytes, 'genesis')
      const onHive = await upload(app, bytes, 'hive')
      expect(onHive.hash).toBe(onGenesis.hash)
      await remove(app, onGenesis.id)
      clock.advance(31 * DAY)
      await gc()
      expect(existsSync(media(app, onGenesis.dir))).toBe(false)
      expect(filesIn(media(app, onHive.dir))).toEqual(names(await variantRows(app, onHive.id)))
      expect(existsSync(original(app, onHive.hash))).toBe(true)
    })
  })

  describe('--dry-run', () => {
    test('changes nothing and lists exactly what a real run then removes', async () => {
      const doomed = await upload(app, await nextImage())
      await remove(app, doomed.id)
      clock.advance(31 * DAY)
      const stray = strayDir(app, clock, 2 * GRACE_MS)
      const before = { dirs: filesIn(media(app, 'genesis')), originals: filesIn(storage(app, 'originals')) }

      const dry = await gc(true)
      expect(dry.imagesDeleted).toContain(doomed.id)
      expect(dry.removed).toEqual(expect.arrayContaining([`${doomed.dir}/`, `originals/${doomed.hash}.jpg`, `${stray}/`]))
      expect(await imageRow(app, doomed.id)).toBeDefined()
      expect((await variantRows(app, doomed.id)).length).toBe(3)
      expect({ dirs: filesIn(media(app, 'genesis')), originals: filesIn(storage(app, 'originals')) }).toEqual(before)

      const real = await gc()
      expect(real.imagesDeleted.sort()).toEqual(dry.imagesDeleted.sort())
      expect(real.removed.sort()).toEqual(dry.removed.sort())
      expect(await imageRow(app, doomed.id)).toBeUndefined()
      expect(existsSync(media(app, stray))).toBe(false)
    })

    test('through the command line, lists the expired image and its files and exits 0 without touching them', async () => {
      const doomed = await upload(app, await nextImage())
      await remove(app, doomed.id)
      // The command runs on the system clock: the deletion and the files are made old in real time.
      const real = { now: () => new Date() }
      await app.db.execute(sql`UPDATE media_images SET deleted_at = ${new Date(Date.now() - 31 * DAY)} WHERE id = ${doomed.id}`)
      age(media(app, doomed.dir), real, 2 * GRACE_MS)
      age(original(app, doomed.hash), real, 2 * GRACE_MS)

      const { code, stdout, stderr } = cli(app, 'gc', '--dry-run')
      expect(stderr).toBe('')
      expect(code).toBe(0)
      expect(stdout).toContain(`would delete image ${doomed.id}\n`)
      expect(stdout).toContain(`would remove ${doomed.dir}/\n`)
      expect(stdout).toContain(`would remove originals/${doomed.hash}.jpg\n`)
      expect(stdout).toMatch(/^gc \(dry run\): \d+ expired image\(s\), \d+ file\(s\) or directories would remove$/m)
      expect(await imageRow(app, doomed.id)).toBeDefined()
      expect(filesIn(media(app, doomed.dir)).length).toBe(3)
      expect(existsSync(original(app, doomed.hash))).toBe(true)
    })
  })

  describe('files no row names', () => {
    test('an unreferenced directory younger than an hour is kept, an older one removed', async () => {
      const young = strayDir(app, clock, GRACE_MS - 60_000)
      const old = strayDir(app, clock, GRACE_MS + 60_000)
      const report = await gc()
      expect(existsSync(media(app, young))).toBe(true)
      expect(existsSync(media(app, old))).toBe(false)
      expect(report.removed).toContain(`${old}/`)
      expect(report.removed).not.toContain(`${young}/`)
    })

    test('an unreferenced original younger than an hour is kept, an older one removed', async () => {
      const [young, old] = [ulid(), ulid()].map((seed) => `${new Bun.CryptoHasher('sha256').update(seed).digest('hex')}.jpg`) as [string, string]
      for (const [name, ms] of [[young, GRACE_MS - 60_000], [old, GRACE_MS + 60_000]] as const) {
        writeFileSync(storage(app, `originals/${name}`), 'an original nobody uses')
        age(storage(app, `originals/${name}`), clock, ms)
      }
      await gc()
      expect(existsSync(storage(app, `originals/${young}`))).toBe(true)
      expect(existsSync(storage(app, `originals/${old}`))).toBe(false)
    })

    test('a temporary file a crash left among the originals goes after an hour', async () => {
      const name = '.upload.jpg.0a1b2c3d4e5f.tmp'
      writeFileSync(storage(app, `originals/${name}`), 'half an original')
      age(storage(app, `originals/${name}`), clock, GRACE_MS + 60_000)
      expect((await gc()).removed).toContain(`originals/${name}`)
      expect(existsSync(storage(app, `originals/${name}`))).toBe(false)
    })

    test('stray temporary and old-width files in a live image’s directory go after an hour; its variants stay', async () => {
      const live = await upload(app, await nextImage())
      const dir = media(app, live.dir)
      const variants = filesIn(dir)
      const strays = { old: '.400.avif.abc123.tmp', young: '.400.webp.def456.tmp', width: '640.avif' }
      for (const name of Object.values(strays)) writeFileSync(join(dir, name), 'partial')
      age(join(dir, strays.old), clock, GRACE_MS + 60_000)
      age(join(dir, strays.width), clock, GRACE_MS + 60_000)
      age(join(dir, strays.young), clock, GRACE_MS - 60_000)
      // The variants themselves are as old as can be: being referenced is what keeps them.
      for (const name of variants) age(join(dir, name), clock, 400 * DAY)

      const report = await gc()
      expect(report.removed).toEqual(expect.arrayContaining([`${live.dir}/${strays.old}`, `${live.dir}/${strays.width}`]))
      expect(filesIn(dir)).toEqual([...variants, strays.young].sort())
    })

    test('temporary uploads older than a day are removed from STORAGE_ROOT/tmp, younger ones kept', async () => {
      mkdirSync(storage(app, 'tmp'), { recursive: true })
      writeFileSync(storage(app, 'tmp/old.upload'), 'abandoned')
      writeFileSync(storage(app, 'tmp/recent.upload'), 'in flight')
      age(storage(app, 'tmp/old.upload'), clock, DAY + 60_000)
      age(storage(app, 'tmp/recent.upload'), clock, DAY - 60_000)
      await gc()
      expect(filesIn(storage(app, 'tmp'))).toEqual(['recent.upload'])
    })

    test('a second run right after the first removes nothing', async () => {
      const doomed = await upload(app, await nextImage())
      await remove(app, doomed.id)
      clock.advance(31 * DAY)
      strayDir(app, clock, 2 * GRACE_MS)
      const first = await gc()
      expect(first.imagesDeleted.length + first.removed.length).toBeGreaterThan(0)
      expect(await gc()).toEqual({ imagesDeleted: [], removed: [] })
    })
  })
})

describe('reprocess', () => {
  let app: Started
  let clock: Clock
  let images: Uploaded[]
  const reprocess = () => reprocessAll(app.deps)
  /** The bytes of every file of the image's directory, by name. */
  const snapshot = (image: Uploaded) => Object.fromEntries(filesIn(media(app, image.dir)).map((name) => [name, sha256(media(app, `${image.dir}/${name}`))]))

  beforeAll(async () => {
    clock = fixedClock(new Date())
    app = await startApp({ clock })
    images = [await upload(app, await nextImage(), 'genesis'), await upload(app, await nextImage(), 'hive')]
  }, 30_000)
  afterAll(async () => {
    await app.destroy()
  })

  test('a variant file deleted on disk is written again', async () => {
    const [image] = images as [Uploaded]
    const avif = (await variantRows(app, image.id)).find((v) => v.format === 'avif')!
    const path = media(app, avif.path)
    rmSync(path)
    const report = await reprocess()
    expect(report.failed).toEqual([])
    expect(report.done.sort()).toEqual(images.map((i) => i.id).sort())
    expect(existsSync(path)).toBe(true)
  })

  test('afterwards the variant rows match the files: same set, bytes, format and size', async () => {
    for (const image of images) {
      const rows = await variantRows(app, image.id)
      expect(names(rows)).toEqual(filesIn(media(app, image.dir)))
      for (const row of rows) {
        const file = media(app, row.path)
        expect(Number(row.bytes)).toBe(statSync(file).size)
        const meta = await sharp(file).metadata()
        expect({ format: meta.format as string, width: meta.width, height: meta.height }).toEqual({
          format: row.format === 'avif' ? 'heif' : row.format,
          width: Number(row.width),
          height: Number(row.height),
        })
      }
    }
  })

  test('the variant rows are swapped while the gallery keeps showing the same, existing files', async () => {
    const shown = async () => (await json(await app.fetch('/spaces/genesis/gallery'))).images
    const before = await shown()
    const rowsBefore = (await variantRows(app, images[0]!.id)).map(({ id: _id, ...rest }) => rest)
    await reprocess()
    // reprocess runs in its own process in real life: the gallery's cache bound applies.
    clock.advance(GALLERY_CACHE_MS)
    const after = await shown()
    expect(after).toEqual(before)
    // The row ids may change; what each row says may not.
    expect((await variantRows(app, images[0]!.id)).map(({ id: _id, ...rest }) => rest)).toEqual(rowsBefore)
    for (const image of after) {
      for (const url of [image.src, ...image.variants.avif.map((v: { url: string }) => v.url), ...image.variants.webp.map((v: { url: string }) => v.url)]) {
        expect(existsSync(media(app, url.slice('https://cdn.test/media/'.length)))).toBe(true)
      }
    }
  })

  test('running it twice writes byte-identical files, the same as the upload wrote', async () => {
    const fresh = await upload(app, await nextImage())
    images.push(fresh)
    const uploaded = snapshot(fresh)
    await reprocess()
    const once = snapshot(fresh)
    await reprocess()
    expect(snapshot(fresh)).toEqual(once)
    expect(once).toEqual(uploaded)
  })

  test('soft-deleted images are left alone', async () => {
    const deleted = await upload(app, await nextImage())
    await remove(app, deleted.id)
    const webp = media(app, (await variantRows(app, deleted.id)).find((v) => v.format === 'webp')!.path)
    rmSync(webp)
    const report = await reprocess()
    expect([...report.done, ...report.failed.map((f) => f.id)]).not.toContain(deleted.id)
    expect(existsSync(webp)).toBe(false)
  })

  test('an image whose original is missing is reported failed and the others are still done', async () => {
    const [victim, ...others] = images as [Uploaded, ...Uploaded[]]
    const hidden = join(app.dir, 'hidden-original.jpg')
    renameSync(original(app, victim.hash), hidden)
    try {
      const report = await reprocess()
      expect(report.failed).toEqual([{ id: victim.id, reason: 'original missing' }])
      expect(report.done.sort()).toEqual(others.map((i) => i.id).sort())
    } finally {
      renameSync(hidden, original(app, victim.hash))
    }
  })

  test('a file that merely starts with the content hash is not taken for the original', async () => {
    const [victim] = images as [Uploaded]
    const aside = `${original(app, victim.hash)}.bak`
    renameSync(original(app, victim.hash), aside)
    try {
      expect((await reprocess()).failed).toEqual([{ id: victim.id, reason: 'original missing' }])
    } finally {
      renameSync(aside, original(app, victim.hash))
    }
  })

  test('through the command line, a missing original makes it exit 1 after doing the others', async () => {
    const [victim] = images as [Uploaded]
    const hidden = join(app.dir, 'hidden-original.jpg')
    renameSync(original(app, victim.hash), hidden)
    try {
      const { code, stdout } = cli(app, 'reprocess')
      expect(code).toBe(1)
      expect(stdout).toContain(`skipped ${victim.id}: its original is missing`)
      expect(stdout).toContain(`reprocess: ${images.length - 1} image(s) reprocessed, 1 failed`)
    } finally {
      renameSync(hidden, original(app, victim.hash))
    }
  })

  test('through the command line, reprocess --gc also collects garbage and exits 0', async () => {
    const stray = strayDir(app, { now: () => new Date() }, 2 * GRACE_MS)
    const { code, stdout, stderr } = cli(app, 'reprocess', '--gc')
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain(`reprocess: ${images.length} image(s) reprocessed, 0 failed`)
    expect(stdout).toContain(`removed ${stray}/`)
    expect(stdout).toMatch(/^gc: \d+ expired image\(s\), \d+ file\(s\) or directories removed$/m)
    expect(existsSync(media(app, stray))).toBe(false)
  })
})

describe('start-up recovery (decision 15)', () => {
  let first: Started
  let restarted: Started
  let ready: Uploaded
  const interrupted = { alone: ulid(), shared: ulid() }
  const orphanHash = new Bun.CryptoHasher('sha256').update('an interrupted upload').digest('hex')
  const started = new Date()

  beforeAll(async () => {
    first = await startApp()
    ready = await upload(first, await nextImage())
    const insert = (id: string, hash: string) =>
      first.db.execute(sql`
        INSERT INTO media_images (id, page, alt, position, is_visible, status, width, height, content_hash, original_name, original_bytes, created_at, updated_at)
        VALUES (${id}, 'genesis', 'Interrupted', 99, ${1}, 'processing', 700, 500, ${hash}, 'photo.jpg', 1000, ${started}, ${started})`)
    // One crashed mid-upload with files of its own; one whose content another image shares.
    await insert(interrupted.alone, orphanHash)
    await insert(interrupted.shared, ready.hash)
    mkdirSync(media(first, `genesis/${orphanHash}`), { recursive: true })
    writeFileSync(media(first, `genesis/${orphanHash}/640.avif`), 'half written')
    writeFileSync(original(first, orphanHash), 'an original')
    mkdirSync(storage(first, 'tmp'), { recursive: true })
    writeFileSync(storage(first, 'tmp/old.upload'), 'from before the crash')
    age(storage(first, 'tmp/old.upload'), { now: () => new Date() }, 60_000)
    // Newer than the restart: an upload that arrived meanwhile, which recovery must not touch.
    writeFileSync(storage(first, 'tmp/new.upload'), 'arriving')
    age(storage(first, 'tmp/new.upload'), { now: () => new Date() }, -60 * 60_000)
    await first.stop()

    restarted = await startApp({ reuse: { dir: first.dir, env: first.env }, migrate: false })
    // Recovery runs at start-up inside the upload queue (P40): an upload's 201 means it is done.
    await upload(restarted, await nextImage(), 'hive')
  }, 30_000)
  afterAll(async () => {
    await restarted.stop()
    if (first.env.DB_DRIVER === 'mysql') {
      const conn = await mysql.createConnection(mysqlServer)
      await conn.query(`DROP DATABASE IF EXISTS \`${first.env.DB_NAME}\``)
      await conn.end()
    }
    rmSync(first.dir, { recursive: true, force: true })
  })

  test('an image left processing becomes failed', async () => {
    expect((await imageRow(restarted, interrupted.alone))?.status).toBe('failed')
    expect((await imageRow(restarted, interrupted.shared))?.status).toBe('failed')
  })

  test('its derivative directory and original are removed', () => {
    expect(existsSync(media(restarted, `genesis/${orphanHash}`))).toBe(false)
    expect(existsSync(original(restarted, orphanHash))).toBe(false)
  })

  test('files it shares with a ready image stay, and that image is still served', async () => {
    expect(filesIn(media(restarted, ready.dir))).toEqual(names(await variantRows(restarted, ready.id)))
    expect(existsSync(original(restarted, ready.hash))).toBe(true)
    expect((await imageRow(restarted, ready.id))?.status).toBe('ready')
    const gallery = await json(await restarted.fetch('/spaces/genesis/gallery'))
    expect(gallery.images.map((i: { id: string }) => i.id)).toEqual([ready.id])
  })

  test('temporary uploads older than the start are removed, newer ones kept', () => {
    expect(filesIn(storage(restarted, 'tmp'))).toEqual(['new.upload'])
  })
})
