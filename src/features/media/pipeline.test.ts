/**
 * The upload's image core (decisions 10, 11; api.md "Variant rules") on real files made by sharp
 * (test/images.ts): what is accepted and refused, what normalising does, the variant plan, and the
 * files written. No HTTP, no database: the media routes' tests cover those.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Unprocessable } from '../../http/errors.ts'
import { sharp } from '../../lib/sharp.ts'
import * as images from '../../../test/images.ts'
import { normalise, planVariants, sniffImage, writeDerivatives, type Normalised, type Variant } from './pipeline.ts'

const root = mkdtempSync(join(tmpdir(), 'spaces-pipeline-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

let uploads = 0
/** Writes the bytes where the upload route would: a temp file named by us. */
function stage(bytes: Buffer): string {
  mkdirSync(join(root, 'tmp'), { recursive: true })
  const path = join(root, 'tmp', `${++uploads}.upload`)
  writeFileSync(path, bytes)
  return path
}

/** A fresh storage + media pair, so each test sees only its own files. */
function roots() {
  const dir = mkdtempSync(join(root, 'case-'))
  return { storage: join(dir, 'storage'), media: join(dir, 'media') }
}

async function refused(promise: Promise<unknown>): Promise<Unprocessable> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(Unprocessable)
  const refusal = error as Unprocessable
  expect(refusal.status).toBe(422)
  expect(refusal.fields?.file).toBeString()
  return refusal
}

const noMetadata = (meta: Awaited<ReturnType<ReturnType<typeof sharp>['metadata']>>) => {
  expect(meta.exif).toBeUndefined()
  expect(meta.orientation).toBeUndefined()
  expect(meta.icc).toBeUndefined()
  expect(meta.xmp).toBeUndefined()
}

/** Colour of one pixel, as [r, g, b(, a)]. */
async function pixel(path: string, x: number, y: number): Promise<number[]> {
  const { data } = await sharp(path).extract({ left: x, top: y, width: 1, height: 1 }).raw().toBuffer({ resolveWithObject: true })
  return [...data]
}

async function processUpload(bytes: Buffer, page = 'genesis') {
  const { storage, media } = roots()
  const n = await normalise(stage(bytes), storage)
  const variants = await writeDerivatives(n.originalPath, media, page, n)
  return { n, variants, storage, media }
}

const ACCEPTED = {
  jpeg: [images.jpeg, 'image/jpeg'],
  png: [images.png, 'image/png'],
  webp: [images.webp, 'image/webp'],
  avif: [images.avif, 'image/avif'],
  'AVIF-coded HEIF (mif1 brand)': [images.avifAsHeif, 'image/heif'],
  'gif (animated)': [images.gif, 'image/gif'],
  tiff: [images.tiff, 'image/tiff'],
} as const

const BAD = {
  svg: images.svg,
  pdf: images.pdf,
  text: images.text,
  'ELF executable': images.elf,
  'truncated JPEG': images.truncatedJpeg,
  'GIF header on a JPEG (polyglot)': images.gifJpegPolyglot,
  'PNG header on SVG markup (polyglot)': images.pngSvgPolyglot,
  'HEIC brand': images.heic,
  'empty file': async () => Buffer.alloc(0),
} as const

describe('which files are accepted (decision 10)', () => {
  for (const [label, [make, mime]] of Object.entries(ACCEPTED)) {
    test(`${label} is sniffed as ${mime} and normalises`, async () => {
      const path = stage(await make())
      expect((await sniffImage(path)).mime).toBe(mime)
      const n = await normalise(path, roots().storage)
      expect(n.width).toBeGreaterThan(0)
      expect(n.height).toBeGreaterThan(0)
    })
  }

  for (const [label, make] of Object.entries(BAD)) {
    test(`${label} is refused with 422`, async () => {
      const { storage } = roots()
      await refused(normalise(stage(await make()), storage))
      expect(existsSync(join(storage, 'originals')) ? readdirSync(join(storage, 'originals')) : []).toEqual([]) // not even a temp file
    })
  }

  test('SVG, PDF, text and executables are refused by sniffing, before any decoder sees them', async () => {
    for (const make of [images.svg, images.pdf, images.text, images.elf]) await refused(sniffImage(stage(await make())))
  })

  test('HEIC is refused with a message that says so', async () => {
    const refusal = await refused(sniffImage(stage(await images.heic())))
    expect(refusal.message).toContain('HEIC')
  })

  test('an image over 100 megapixels is refused with 422, before its pixels are decoded', async () => {
    const refusal = await refused(normalise(stage(await images.huge()), roots().storage))
    expect(refusal.message).toContain('100 megapixels')
  })

  test('a JPEG with a payload appended is accepted, and the payload does not survive', async () => {
    const { n } = await processUpload(await images.jpegWithPayload())
    expect(readFileSync(n.originalPath).includes('<script>')).toBe(false)
  })
})

describe('normalise', () => {
  test('the EXIF orientation is applied: a 400x200 orientation-6 JPEG becomes 200x400, red half on top', async () => {
    const { n, variants, media } = await processUpload(await images.jpegWithExifOrientation(6, 400, 200))
    expect([n.width, n.height]).toEqual([200, 400])
    const [r, , b] = await pixel(n.originalPath, 100, 50)
    expect(r).toBeGreaterThan(200)
    expect(b).toBeLessThan(60)
    expect((await pixel(n.originalPath, 100, 350))[2]).toBeGreaterThan(200)
    for (const v of variants) expect([v.width, v.height]).toEqual([200, 400])
    noMetadata(await sharp(n.originalPath).metadata())
    for (const v of variants) noMetadata(await sharp(join(media, v.path)).metadata())
  })

  test('the original is stored as originals/<sha256>.<ext>, and its hash is of its bytes', async () => {
    const { storage } = roots()
    const n = await normalise(stage(await images.jpeg()), storage)
    expect(n.originalPath).toBe(join(storage, 'originals', `${n.contentHash}.jpg`))
    expect(n.contentHash).toBe(createHash('sha256').update(readFileSync(n.originalPath)).digest('hex'))
    expect(n.format).toBe('jpeg')
    expect(readdirSync(join(storage, 'originals'))).toEqual([`${n.contentHash}.jpg`])
  })

  test('the same upload always gives the same bytes, so the same content hash', async () => {
    const bytes = await images.photo(800, 533)
    const [a, b]: Normalised[] = [await normalise(stage(bytes), roots().storage), await normalise(stage(bytes), roots().storage)]
    expect(a!.contentHash).toBe(b!.contentHash)
    expect(readFileSync(a!.originalPath).equals(readFileSync(b!.originalPath))).toBe(true)
  })

  test('a CMYK JPEG comes out sRGB', async () => {
    const n = await normalise(stage(await images.cmykJpeg()), roots().storage)
    const meta = await sharp(n.originalPath).metadata()
    expect(meta.space).toBe('srgb')
    expect(meta.channels).toBe(3)
  })

  test('alpha is kept: the original is a PNG with its transparency', async () => {
    const n = await normalise(stage(await images.pngWithAlpha()), roots().storage)
    expect(n.format).toBe('png')
    expect(n.originalPath.endsWith('.png')).toBe(true)
    expect((await sharp(n.originalPath).metadata()).hasAlpha).toBe(true)
    expect((await pixel(n.originalPath, 10, 10))[3]).toBe(0)
  })

  test('an animated GIF keeps its first frame only', async () => {
    const n = await normalise(stage(await images.gif(160, 120)), roots().storage)
    expect([n.width, n.height]).toEqual([160, 120])
    const [r, , b] = await pixel(n.originalPath, 80, 60)
    expect(r).toBeGreaterThan(200)
    expect(b).toBeLessThan(60)
  })
})

describe('planVariants (decision 11)', () => {
  const sizes = (plan: ReturnType<typeof planVariants>, format: string) => plan.filter((v) => v.format === format).map((v) => `${v.width}x${v.height}`)

  test('6000x4000: all four widths as AVIF and WebP, the JPEG primary at 1600', () => {
    const plan = planVariants(6000, 4000)
    const all = ['640x427', '1024x683', '1600x1067', '2400x1600']
    expect(sizes(plan, 'avif')).toEqual(all)
    expect(sizes(plan, 'webp')).toEqual(all)
    expect(plan.filter((v) => v.isPrimary)).toEqual([{ format: 'jpeg', width: 1600, height: 1067, isPrimary: true }])
    expect(plan).toHaveLength(9)
  })

  test('400x300, narrower than 640: one AVIF and one WebP at its own width, the JPEG too', () => {
    expect(planVariants(400, 300)).toEqual([
      { format: 'avif', width: 400, height: 300, isPrimary: false },
      { format: 'webp', width: 400, height: 300, isPrimary: false },
      { format: 'jpeg', width: 400, height: 300, isPrimary: true },
    ])
  })

  test('1600x3600 portrait: the long edge caps at 2400, so the 2400 target repeats 1600’s width and is skipped', () => {
    const plan = planVariants(1600, 3600)
    expect(sizes(plan, 'avif')).toEqual(['640x1440', '1024x2304', '1067x2400'])
    expect(sizes(plan, 'webp')).toEqual(['640x1440', '1024x2304', '1067x2400'])
    expect(sizes(plan, 'jpeg')).toEqual(['1067x2400'])
  })

  test('1000x1000: 640, then the 1024 target gives the original 1000; 1600 and 2400 would repeat it', () => {
    const plan = planVariants(1000, 1000)
    expect(sizes(plan, 'avif')).toEqual(['640x640', '1000x1000'])
    expect(sizes(plan, 'jpeg')).toEqual(['1000x1000'])
  })

  test('a very tall narrow image still respects the 2400 px long edge', () => {
    expect(sizes(planVariants(333, 5000), 'avif')).toEqual(['160x2400'])
  })

  test('sizes round as sharp does when it fits an image inside width x 2400 without enlarging', async () => {
    for (const [w, h] of [[6000, 4000], [1600, 3600], [4999, 3333], [3001, 2001], [333, 5000], [2401, 17]] as const) {
      const image = sharp({ create: { width: w, height: h, channels: 3, background: 'grey' } })
      const bySharp = async (width: number) => {
        const { info } = await image.clone().resize(width, 2400, { fit: 'inside', withoutEnlargement: true }).raw().toBuffer({ resolveWithObject: true })
        return { width: info.width, height: info.height }
      }
      const expected: { width: number; height: number }[] = []
      for (const target of [640, 1024, 1600, 2400]) {
        const size = await bySharp(target)
        if (!expected.some((e) => e.width === size.width)) expected.push(size)
      }
      const plan = planVariants(w, h)
      expect(plan.filter((v) => v.format === 'avif').map(({ width, height }) => ({ width, height }))).toEqual(expected)
      const { width, height } = plan.find((v) => v.isPrimary)!
      expect({ width, height }).toEqual(await bySharp(1600))
    }
  })

  test('always exactly one primary, a JPEG; no width twice within a format; nothing past 2400 px', () => {
    for (const [w, h] of [[6000, 4000], [400, 300], [1600, 3600], [1000, 1000], [2400, 2400], [640, 480], [641, 480], [10000, 10000], [1, 1]] as const) {
      const plan = planVariants(w, h)
      expect(plan.filter((v) => v.isPrimary).map((v) => v.format)).toEqual(['jpeg'])
      for (const format of ['avif', 'webp']) {
        const widths = plan.filter((v) => v.format === format).map((v) => v.width)
        expect(new Set(widths).size).toBe(widths.length)
      }
      for (const v of plan) {
        expect(Math.max(v.width, v.height)).toBeLessThanOrEqual(2400)
        expect(v.width).toBeLessThanOrEqual(w)
      }
    }
  })
})

describe('writeDerivatives', () => {
  const EXT = { avif: 'avif', webp: 'webp', jpeg: 'jpg' } as const
  const DECODED = { avif: 'heif', webp: 'webp', jpeg: 'jpeg' } as const

  async function checkFiles(media: string, n: Normalised, variants: Variant[]) {
    for (const v of variants) {
      expect(v.path).toBe(`genesis/${n.contentHash}/${v.width}.${EXT[v.format]}`)
      const file = join(media, v.path)
      const meta = await sharp(file).metadata()
      expect([meta.format, meta.width, meta.height]).toEqual([DECODED[v.format], v.width, v.height])
      expect(readFileSync(file).length).toBe(v.bytes)
      noMetadata(meta)
    }
    const names = readdirSync(join(media, 'genesis', n.contentHash)).sort()
    expect(names).toEqual(variants.map((v) => `${v.width}.${EXT[v.format]}`).sort())
  }

  test('a 3000x2000 upload: every planned variant is written, decodes to its planned size and format', async () => {
    const { n, variants, media, storage } = await processUpload(await images.jpeg(3000, 2000))
    expect(variants.map(({ format, width, height, isPrimary }) => ({ format, width, height, isPrimary }))).toEqual(planVariants(3000, 2000))
    await checkFiles(media, n, variants)
    expect(readdirSync(join(storage, 'originals'))).toEqual([`${n.contentHash}.jpg`]) // no temp names left
  })

  test('a 1600x3600 portrait: three sizes, the repeated width skipped, the real heights on disk', async () => {
    const { n, variants, media } = await processUpload(await images.tallPortrait())
    expect(variants.filter((v) => v.format === 'webp').map((v) => `${v.width}x${v.height}`)).toEqual(['640x1440', '1024x2304', '1067x2400'])
    await checkFiles(media, n, variants)
  })

  test('alpha survives in AVIF and WebP; the JPEG is flattened onto white', async () => {
    const { variants, media } = await processUpload(await images.pngWithAlpha())
    for (const v of variants) {
      const file = join(media, v.path)
      expect((await sharp(file).metadata()).hasAlpha).toBe(v.format !== 'jpeg')
      if (v.format === 'jpeg') expect((await pixel(file, 10, 10)).every((c) => c > 245)).toBe(true)
      else expect((await pixel(file, 10, 10))[3]).toBe(0)
    }
  })

  test('the same content again shares the directory and gives the same rows (decision 12)', async () => {
    const bytes = await images.jpeg(700, 500)
    const { storage, media } = roots()
    const first = await normalise(stage(bytes), storage)
    const a = await writeDerivatives(first.originalPath, media, 'hive', first)
    const second = await normalise(stage(bytes), storage)
    const b = await writeDerivatives(second.originalPath, media, 'hive', second)
    expect(second.contentHash).toBe(first.contentHash)
    expect(b).toEqual(a)
    expect(readdirSync(join(media, 'hive', first.contentHash))).toHaveLength(a.length)
  })

  test('on failure it removes the files it wrote, leaves no temp file, and rethrows', async () => {
    const { storage, media } = roots()
    const n = await normalise(stage(await images.jpeg(700, 500)), storage)
    // A directory where the 700 px WebP must go: that rename fails, the other encodes succeed.
    const dir = join(media, 'genesis', n.contentHash)
    mkdirSync(join(dir, '700.webp'), { recursive: true })
    await expect(writeDerivatives(n.originalPath, media, 'genesis', n)).rejects.toThrow()
    expect(readdirSync(dir)).toEqual(['700.webp'])
  })

  test('a variant directory is only ever made from a safe page and a sha256', async () => {
    const n = await normalise(stage(await images.jpeg()), roots().storage)
    await expect(writeDerivatives(n.originalPath, roots().media, '../public', n)).rejects.toThrow('unsafe')
  })
})
