/**
 * Real image files for tests and benchmarks, made by sharp at run time (no binary fixtures).
 * Every generator returns the encoded bytes; write them where the code under test expects a file.
 * The bad inputs are what an upload may really contain: other formats, truncations, polyglots.
 */
import { sharp } from '../src/lib/sharp.ts'

type Rgb = { r: number; g: number; b: number }

/** A flat opaque image, the raw material of the simple generators. */
const flat = (width: number, height: number, colour: Rgb = { r: 200, g: 120, b: 40 }) =>
  sharp({ create: { width, height, channels: 3, background: colour } })

/** A smooth diagonal gradient: cheap to encode, but not a single colour, so resizing is visible. */
function gradient(width: number, height: number) {
  const px = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3
      px[i] = (x * 255) / width
      px[i + 1] = (y * 255) / height
      px[i + 2] = 128
    }
  }
  return sharp(px, { raw: { width, height, channels: 3 } })
}

export const jpeg = (width = 320, height = 240) => gradient(width, height).jpeg({ quality: 90 }).toBuffer()
export const png = (width = 320, height = 240) => gradient(width, height).png().toBuffer()
export const webp = (width = 320, height = 240) => gradient(width, height).webp().toBuffer()
export const avif = (width = 320, height = 240) => gradient(width, height).avif({ effort: 0 }).toBuffer()
export const tiff = (width = 320, height = 240) => gradient(width, height).tiff().toBuffer()
/** An original narrower than the smallest target width (decision 11). */
export const narrow = (width = 400, height = 300) => jpeg(width, height)
/** A portrait whose long edge is over the 2400 px cap. */
export const tallPortrait = (width = 1600, height = 3600) => jpeg(width, height)

/**
 * A JPEG stored sideways: `width` x `height` pixels, left half red, right half blue, with EXIF
 * `orientation`, an sRGB ICC profile, XMP and an EXIF copyright, all of which must go. Shown upright
 * (orientation 6 = rotate 90° clockwise) the red half is on top.
 */
export function jpegWithExifOrientation(orientation = 6, width = 400, height = 200) {
  const half = Math.floor(width / 2)
  return flat(width, height, { r: 0, g: 0, b: 255 })
    .composite([{ input: { create: { width: half, height, channels: 3, background: { r: 255, g: 0, b: 0 } } }, left: 0, top: 0 }])
    .withExif({ IFD0: { Copyright: 'Test Photographer', Software: 'spaces-api tests' } })
    .withXmp('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/></x:xmpmeta>')
    .withMetadata({ orientation })
    .jpeg({ quality: 90 })
    .toBuffer()
}

/** A PNG whose left half is fully transparent and right half half-transparent green. */
export function pngWithAlpha(width = 320, height = 240) {
  const px = Buffer.alloc(width * height * 4)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4
      px[i + 1] = 200
      px[i + 3] = x < width / 2 ? 0 : 128
    }
  }
  return sharp(px, { raw: { width, height, channels: 4 } }).png().toBuffer()
}

/** A CMYK JPEG (print workflows still produce them); browsers need sRGB. */
export const cmykJpeg = (width = 320, height = 240) => gradient(width, height).toColourspace('cmyk').jpeg({ quality: 90 }).toBuffer()

/** An animated GIF of two frames (red, then blue); only the first frame is kept. */
export async function gif(width = 160, height = 120) {
  const frames = await Promise.all([{ r: 255, g: 0, b: 0 }, { r: 0, g: 0, b: 255 }].map((c) => flat(width, height, c).png().toBuffer()))
  return sharp(frames, { join: { animated: true } }).gif({ delay: [500, 500] }).toBuffer()
}

/** Rewrites the ISO-BMFF major brand (bytes 8-11 of the `ftyp` box) of an AVIF made by sharp. */
async function withMajorBrand(brand: 'heic' | 'mif1') {
  const bytes = Buffer.from(await avif())
  if (bytes.toString('latin1', 4, 8) !== 'ftyp') throw new Error('sharp wrote an AVIF without a leading ftyp box')
  bytes.write(brand, 8, 'latin1')
  return bytes
}

/**
 * A file that declares itself HEIC (major brand `heic`). sharp's prebuilt libheif has no HEVC
 * encoder (`heif({ compression: 'hevc' })` fails with "Unsupported compression"), so a truly
 * HEVC-coded file cannot be made here: this is an AV1 payload under the HEIC brand, refused by brand.
 */
export const heic = () => withMajorBrand('heic')
/** An AVIF-coded HEIF under the generic `mif1` brand: AVIF/HEIF "when AVIF-coded", so accepted. */
export const avifAsHeif = () => withMajorBrand('mif1')

/** Over 100 megapixels (10001 x 10001) yet about 115 kB on disk: one grey level compresses away. */
let hugeCache: Promise<Buffer> | undefined
export const huge = () => (hugeCache ??= flat(10001, 10001, { r: 255, g: 255, b: 255 }).toColourspace('b-w').png({ compressionLevel: 9 }).toBuffer())

export const svg = async () =>
  Buffer.from('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect width="100" height="100" fill="red"/></svg>\n')

/** A minimal one-page PDF with a line of text. */
export const pdf = async () =>
  Buffer.from(
    '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n' +
      '3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 100]/Contents 4 0 R>>endobj\n' +
      '4 0 obj<</Length 35>>stream\nBT /F1 12 Tf 20 50 Td (Hello) Tj ET\nendstream endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
  )

export const text = async () => Buffer.from('Dear team,\nplease find the floor plan attached.\n')

/** The first bytes of a 64-bit x86 ELF executable, padded. */
export async function elf() {
  const header = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0x3e, 0, 1, 0, 0, 0])
  return Buffer.concat([header, Buffer.alloc(512)])
}

/** The first half of a noisy JPEG: the header parses, the pixel data ends early. */
export async function truncatedJpeg() {
  const whole = await sharp({ create: { width: 320, height: 240, channels: 3, background: 'grey', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .jpeg()
    .toBuffer()
  return whole.subarray(0, Math.floor(whole.length / 2))
}

/** A GIF signature in front of a whole JPEG: sniffed as GIF, which it is not. */
export const gifJpegPolyglot = async () => Buffer.concat([Buffer.from('GIF89a'), await jpeg(64, 48)])

/** A real PNG signature and IHDR chunk in front of SVG markup: sniffed as PNG, with no PNG pixels. */
export const pngSvgPolyglot = async () => Buffer.concat([(await png(16, 16)).subarray(0, 33), await svg()])

/** A valid JPEG with an HTML/script payload appended: a real image, whose payload must not survive. */
export const jpegWithPayload = async () => Buffer.concat([await jpeg(64, 48), Buffer.from('<html><script>alert(1)</script></html>')])

/**
 * A photo-like JPEG: smooth colour regions, texture at two scales, fine grain and hard-edged
 * rectangles, so it compresses like a camera photo (6000 x 4000 at q90 is about 6 MB), unlike flat
 * test colours. Deterministic for a given seed. 24 MP takes a few seconds: meant for benchmarks.
 */
export async function photo(width = 640, height = 427, quality = 90, seed = 42) {
  let state = seed
  // mulberry32: small, fast, good enough for texture
  const rnd = () => {
    state = (state + 0x6d2b79f5) | 0
    let r = Math.imul(state ^ (state >>> 15), 1 | state)
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296
  }
  const layer = async (w: number, h: number, channels: 1 | 3) => {
    const noise = Buffer.alloc(w * h * channels)
    for (let i = 0; i < noise.length; i++) noise[i] = rnd() * 256
    return sharp(noise, { raw: { width: w, height: h, channels } })
      .resize(width, height, { kernel: 'cubic', fit: 'fill' })
      .toColourspace(channels === 1 ? 'b-w' : 'srgb')
      .raw()
      .toBuffer()
  }
  const colour = await layer(12, 8, 3)
  const coarse = await layer(Math.ceil(width / 40), Math.ceil(height / 40), 1)
  const fine = await layer(Math.ceil(width / 5), Math.ceil(height / 5), 1)
  const rects = Array.from({ length: 60 }, () => ({
    x: Math.floor(rnd() * width),
    y: Math.floor(rnd() * height),
    w: Math.floor((0.01 + rnd() * 0.2) * width),
    h: Math.floor((0.01 + rnd() * 0.22) * height),
    d: Math.floor(rnd() * 100 - 50),
  }))
  const px = new Uint8ClampedArray(width * height * 3)
  const edge = new Int16Array(width)
  for (let y = 0; y < height; y++) {
    edge.fill(0)
    for (const r of rects) if (y >= r.y && y < r.y + r.h) for (let x = r.x; x < Math.min(width, r.x + r.w); x++) edge[x]! += r.d
    for (let x = 0; x < width; x++) {
      const p = y * width + x
      const lum = (coarse[p]! - 128) * 0.5 + (fine[p]! - 128) * 0.25 + (rnd() - 0.5) * 30 + edge[x]!
      for (let c = 0; c < 3; c++) px[p * 3 + c] = colour[p * 3 + c]! * 0.8 + 25 + lum
    }
  }
  return sharp(px, { raw: { width, height, channels: 3 } }).blur(0.6).jpeg({ quality }).toBuffer()
}
