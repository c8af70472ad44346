/**
 * The image-processing core of an upload (api.md "Variant rules", "Upload rules"; decisions 10, 11):
 * decide the type from the bytes, normalise once into the private original, plan and write the
 * derivatives. No HTTP and no database here; figures behind the settings are in
 * docs/performance.md ("Upload") and come from bench/upload.ts.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, rename, rm, rmdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { fileTypeFromBuffer } from 'file-type'
import { Unprocessable } from '../../http/errors.ts'
import { releaseNativeMemory, sharp } from '../../lib/sharp.ts'

export type Format = 'avif' | 'webp' | 'jpeg'

export interface Variant {
  format: Format
  width: number
  height: number
  bytes: number
  /** Relative to MEDIA_ROOT: `${page}/${contentHash}/${width}.${ext}`, ext avif, webp or jpg. */
  path: string
  isPrimary: boolean
}

export interface Normalised {
  /** SHA-256 hex of the normalised original's bytes. */
  contentHash: string
  width: number
  height: number
  /** Absolute, under STORAGE_ROOT/originals/. */
  originalPath: string
  /** `jpeg` or `png`. */
  format: string
}

export type PlannedVariant = Pick<Variant, 'format' | 'width' | 'height' | 'isPrimary'>

/** Decision 10: more than this many pixels is refused, before any pixel is decoded. */
export const MAX_PIXELS = 100_000_000
export const TARGET_WIDTHS = [640, 1024, 1600, 2400] as const
export const LONG_EDGE = 2400
export const PRIMARY_WIDTH = 1600

export const QUALITY = { avif: 72, webp: 80, jpeg: 80 } as const
/** The normalised original's encodings; why these, see normalise(). */
export const ORIGINAL_JPEG = { quality: 95, optimiseCoding: false } as const
export const ORIGINAL_PNG = { compressionLevel: 3 } as const
/**
 * The lowest effort whose bytes stay within 15% of sharp's default (4) at the same quality on both
 * a grainy and a smooth photo (+0.2% and +9%); efforts 0-2 cost +46-49% on the smooth one, and 4
 * takes 4-5x as long as 3 (docs/performance.md, "Upload").
 */
export const AVIF_EFFORT = 3
/** Encodes in flight at once, each on one libvips thread (sharp.concurrency(1)): one per core here. */
export const ENCODERS = 2

/**
 * 'error' refuses truncated and undecodable files but tolerates the benign libjpeg warnings some
 * phones' JPEGs raise ("extraneous bytes before marker"), which 'warning' would refuse.
 */
const DECODE = { failOn: 'error', limitInputPixels: MAX_PIXELS } as const

const ACCEPTED_LIST = 'JPEG, PNG, WebP, AVIF, GIF or TIFF'
/** Sniffed MIME type -> the libvips decoder that must then read it (the polyglot cross-check). */
const DECODER: Record<string, string> = {
  'image/jpeg': 'jpeg',
  'image/png': 'png',
  'image/apng': 'png', // an animated PNG is a PNG; its default image is the first frame
  'image/webp': 'webp',
  'image/avif': 'heif',
  'image/heif': 'heif', // generic `mif1` brand: accepted only when AVIF-coded, see avifCoded()
  'image/gif': 'gif',
  'image/tiff': 'tiff',
}
const HEVC_TYPES = new Set(['image/heic', 'image/heic-sequence', 'image/heif-sequence'])

const refuse = (message: string, file: string) => new Unprocessable(message, { file })
const notSupported = (what: string) => refuse(`Unsupported file type: ${what}`, `must be a ${ACCEPTED_LIST} image`)
const heicRefused = () =>
  refuse('HEIC images are not supported', 'HEIC (HEVC-coded) photos are not accepted; export as JPEG or AVIF and upload again')
const damaged = () => refuse('The image is damaged or incomplete and cannot be read', 'could not be decoded as an image')
const tooLarge = () => refuse('The image is larger than 100 megapixels', 'must be at most 100 megapixels')

const SNIFF_BYTES = 64 * 1024

/** Decides the type from the leading bytes (decision 10); anything else is a 422 on `file`. */
export async function sniffImage(path: string): Promise<{ ext: string; mime: string }> {
  // The leading bytes only: every accepted format is told apart within them. (fileTypeFromFile
  // loads strtok3 lazily, which the compiled executable does not carry.)
  const type = await fileTypeFromBuffer(new Uint8Array(await Bun.file(path).slice(0, SNIFF_BYTES).arrayBuffer()))
  if (!type) throw notSupported('not a recognised image')
  if (HEVC_TYPES.has(type.mime)) throw heicRefused()
  if (!DECODER[type.mime]) throw notSupported(type.mime)
  if (DECODER[type.mime] === 'heif' && !(await avifCoded(path))) throw heicRefused()
  return { ext: type.ext, mime: type.mime }
}

/**
 * An ISO-BMFF image is AVIF-coded when its `ftyp` box names the `avif`/`avis` brand, as the AVIF
 * specification requires. libvips' own `compression` guess goes by the major brand alone, so a
 * `mif1` AVIF would read as HEVC there; the brands are read directly instead.
 */
async function avifCoded(path: string): Promise<boolean> {
  const head = Buffer.from(await Bun.file(path).slice(0, 512).arrayBuffer())
  if (head.length < 16 || head.toString('latin1', 4, 8) !== 'ftyp') return false
  const end = Math.min(head.length, head.readUInt32BE(0))
  const brands = [head.toString('latin1', 8, 12)]
  for (let at = 16; at + 4 <= end; at += 4) brands.push(head.toString('latin1', at, at + 4))
  if (['heic', 'heix', 'hevc', 'hevx'].includes(brands[0]!)) return false
  return brands.includes('avif') || brands.includes('avis')
}

/**
 * Sorts a sharp failure: an operating-system error (the disk, our directories) is ours and stays a
 * 500; anything else came from decoding the upload. libvips words its I/O failures this way.
 */
function decodeFailure(error: unknown): Error {
  const message = String((error as Error)?.message)
  if (/system error|unable to open for write|write error/i.test(message)) return error as Error
  return /pixel limit/i.test(message) ? tooLarge() : damaged()
}

/**
 * Decodes the upload (EXIF rotation applied, sRGB, alpha kept) and encodes the normalised original
 * once, deterministically and without any metadata, to `originals/<sha256>.<ext>`. libvips streams
 * from file to file, so a 24 MP upload never sits in memory as pixels.
 */
export async function normalise(tmpPath: string, storageRoot: string): Promise<Normalised> {
  const type = await sniffImage(tmpPath)
  const meta = await sharp(tmpPath, DECODE)
    .metadata()
    .catch((error: unknown) => {
      throw decodeFailure(error)
    })
  if (meta.format !== DECODER[type.mime]) throw refuse('The file content does not match its image type', 'is not a well-formed image')
  if ((meta.width ?? 0) * (meta.height ?? 0) > MAX_PIXELS) throw tooLarge()

  // Measured on a 24 MP photo (docs/performance.md): JPEG q95 without Huffman optimisation makes
  // this whole step ~0.16 s, at ~1.4x the upload's bytes; optimising saves 14% of the bytes for
  // 2.4x the time and +130 MB of memory. PNG is lossless but 1.2-2.8 s and ~8x the bytes (WebP
  // lossless: 21 s), so PNG (level 3: level 6's size, faster) only where alpha must survive. A JPEG
  // upload keeps its own chroma subsampling; others get 4:4:4, so coloured edges stay sharp.
  const alpha = meta.hasAlpha === true
  const chroma = type.mime === 'image/jpeg' && meta.chromaSubsampling === '4:2:0' ? '4:2:0' : '4:4:4'
  const image = sharp(tmpPath, DECODE).rotate().toColourspace('srgb')
  const encoded = alpha ? image.png(ORIGINAL_PNG) : image.jpeg({ ...ORIGINAL_JPEG, chromaSubsampling: chroma })
  const ext = alpha ? 'png' : 'jpg'

  const dir = join(storageRoot, 'originals')
  await mkdir(dir, { recursive: true })
  const tmp = join(dir, tempName(ext))
  try {
    const out = await encoded.toFile(tmp).catch((error: unknown) => {
      throw decodeFailure(error)
    })
    const contentHash = await sha256File(tmp)
    await fsync(tmp) // the original is the one copy everything else is rebuilt from
    const originalPath = join(dir, `${contentHash}.${ext}`)
    await rename(tmp, originalPath)
    return { contentHash, width: out.width, height: out.height, originalPath, format: alpha ? 'png' : 'jpeg' }
  } catch (error) {
    await rm(tmp, { force: true })
    throw error
  }
}

/** Fits width x height within maxWidth and the long edge, never enlarging; rounds as libvips does. */
function fit(width: number, height: number, maxWidth: number): { width: number; height: number } {
  const shrink = Math.max(width / maxWidth, height / LONG_EDGE, 1)
  return { width: Math.max(1, Math.round(width / shrink)), height: Math.max(1, Math.round(height / shrink)) }
}

/**
 * Decision 11, pure: one size per target width, a repeat of a smaller target's width skipped (so an
 * original narrower than 640 px gets one size, its own), each as AVIF and WebP; plus the one JPEG
 * primary within 1600 px wide. All within the 2400 px long edge.
 */
export function planVariants(width: number, height: number): PlannedVariant[] {
  const sizes: { width: number; height: number }[] = []
  for (const target of TARGET_WIDTHS) {
    const size = fit(width, height, target)
    if (!sizes.some((s) => s.width === size.width)) sizes.push(size)
  }
  return [
    ...sizes.map((s) => ({ format: 'avif' as const, ...s, isPrimary: false })),
    ...sizes.map((s) => ({ format: 'webp' as const, ...s, isPrimary: false })),
    { format: 'jpeg', ...fit(width, height, PRIMARY_WIDTH), isPrimary: true },
  ]
}

const EXT: Record<Format, string> = { avif: 'avif', webp: 'webp', jpeg: 'jpg' }
/** Relative encode cost per pixel, to start the slowest encodes first. */
const COST: Record<Format, number> = { avif: 6, webp: 1, jpeg: 1 }

export interface DeriveOptions {
  /** Called as each variant lands, with its encode time (resize included the first time a size is made). */
  onVariant?: (variant: Variant, ms: number) => void
  /** Encodes in flight at once; ENCODERS unless a benchmark compares. */
  encoders?: number
}

/**
 * Encodes every planned variant of the normalised original into `${mediaRoot}/${page}/${contentHash}/`,
 * ENCODERS at a time, slowest first, each under a temporary name in that directory renamed into
 * place, so a reader never sees half a file. On failure removes what this call added, then rethrows.
 */
export async function writeDerivatives(
  originalPath: string,
  mediaRoot: string,
  page: string,
  n: Pick<Normalised, 'contentHash' | 'width' | 'height'>,
  options: DeriveOptions = {},
): Promise<Variant[]> {
  // Both end up in a path: only ever our own values, but a path is no place to find out otherwise.
  if (!/^[a-z0-9-]+$/.test(page) || !/^[0-9a-f]{64}$/.test(n.contentHash)) throw new Error(`unsafe media path ${page}/${n.contentHash}`)
  const relDir = `${page}/${n.contentHash}`
  const dir = join(mediaRoot, page, n.contentHash)
  const meta = await sharp(originalPath, DECODE).metadata()
  if (meta.width !== n.width || meta.height !== n.height) throw new Error(`original is ${meta.width}x${meta.height}, expected ${n.width}x${n.height}`)
  const dirExisted = await exists(dir)
  await mkdir(dir, { recursive: true })

  // One decode per size, straight from the file: JPEG shrink-on-load makes the small ones cheap and
  // the full-size pixels never sit in memory (measured: no slower than decoding once and resizing in
  // memory, ~100 MB lower at the peak). AVIF and WebP of a size share its pixels.
  const resized = new Map<string, Promise<{ data: Buffer; info: { width: number; height: number; channels: 1 | 2 | 3 | 4 } }>>()
  const pixels = (width: number, height: number) => {
    const key = `${width}x${height}`
    let decoded = resized.get(key)
    if (!decoded) {
      decoded = sharp(originalPath, DECODE)
        .resize(width, height, { fit: 'fill', fastShrinkOnLoad: false })
        .toColourspace('srgb')
        .raw({ depth: 'uchar' })
        .toBuffer({ resolveWithObject: true })
      resized.set(key, decoded)
    }
    return decoded
  }

  const added: string[] = [] // files this call created, removed again on failure
  const temps = new Set<string>()
  const plan = planVariants(n.width, n.height).sort((a, b) => COST[b.format] * b.width * b.height - COST[a.format] * a.width * a.height)
  const jobs = plan.map((p) => async (): Promise<Variant> => {
    const started = performance.now()
    const { data, info } = await pixels(p.width, p.height)
    const image = sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } })
    const encoder =
      p.format === 'avif'
        ? image.avif({ quality: QUALITY.avif, effort: AVIF_EFFORT })
        : p.format === 'webp'
          ? image.webp({ quality: QUALITY.webp })
          : image.flatten({ background: '#ffffff' }).jpeg({ quality: QUALITY.jpeg, mozjpeg: true })
    const name = `${p.width}.${EXT[p.format]}`
    const tmp = join(dir, tempName(name))
    temps.add(tmp)
    const out = await encoder.toFile(tmp)
    if (out.width !== p.width || out.height !== p.height) throw new Error(`${name} came out ${out.width}x${out.height}, planned ${p.width}x${p.height}`)
    const final = join(dir, name)
    // The same content uploaded again shares this directory (decision 12): a file already there
    // belongs to the earlier image and is replaced by identical bytes, never removed on failure.
    if (!(await exists(final))) added.push(final)
    await rename(tmp, final)
    temps.delete(tmp)
    const variant: Variant = { ...p, bytes: out.size, path: `${relDir}/${name}` }
    options.onVariant?.(variant, performance.now() - started)
    return variant
  })

  try {
    const variants = await runAll(jobs, options.encoders ?? ENCODERS)
    const order: Format[] = ['avif', 'webp', 'jpeg']
    return variants.sort((a, b) => order.indexOf(a.format) - order.indexOf(b.format) || a.width - b.width)
  } catch (error) {
    await Promise.all([...added, ...temps].map((path) => rm(path, { force: true })))
    if (!dirExisted) await rmdir(dir).catch(() => {}) // only if now empty
    throw error
  } finally {
    releaseNativeMemory()
  }
}

/** Runs the jobs `width` at a time; after a failure starts no new one, lets the running finish, throws the first error. */
async function runAll<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const results: T[] = []
  let next = 0
  let failure: { error: unknown } | undefined
  const worker = async () => {
    while (!failure && next < jobs.length) {
      const index = next++
      try {
        results[index] = await jobs[index]!()
      } catch (error) {
        failure ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, jobs.length) }, worker))
  if (failure) throw failure.error
  return results
}

/** A dot-name in the destination's own directory, so the rename is atomic and a sweep can tell it apart. */
const tempName = (name: string) => `.${name}.${randomBytes(6).toString('hex')}.tmp`

const exists = (path: string) => stat(path).then(
  () => true,
  () => false,
)

async function sha256File(path: string): Promise<string> {
  const hash = new Bun.CryptoHasher('sha256')
  for await (const chunk of Bun.file(path).stream()) hash.update(chunk)
  return hash.digest('hex')
}

async function fsync(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
