/**
 * An upload's image work (normalise + writeDerivatives, src/features/media/pipeline.ts) on a 24 MP
 * photo-like JPEG, beside its floor: the same encodes run alone, back to back, from pixels already
 * decoded in memory. Every figure is printed beside its goal; see docs/performance.md ("Upload").
 *
 *   bun run bench/upload.ts [--runs 3] [--no-reference] [--efforts] [--matrix]
 *
 * --efforts  AVIF effort 0-4: time and bytes of the AVIF set, on this photo and a smooth one
 * --matrix   sharp.concurrency 1/2 x encoders 1/2, and decoding once instead of once per size
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { AVIF_EFFORT, ENCODERS, ORIGINAL_JPEG, QUALITY, normalise, planVariants, writeDerivatives, type Format, type PlannedVariant, type Variant } from '../src/features/media/pipeline.ts'
import { releaseNativeMemory, sharp } from '../src/lib/sharp.ts'
import { photo } from '../test/images.ts'

const WIDTH = 6000
const HEIGHT = 4000
const GOAL = { totalMs: 6000, ratio: 1.3, rssMb: 700, avifExtra: 0.15 }

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    runs: { type: 'string', default: '3' },
    'no-reference': { type: 'boolean', default: false },
    efforts: { type: 'boolean', default: false },
    matrix: { type: 'boolean', default: false },
    'make-photo': { type: 'string' },
  },
})

// Child mode: the 24 MP test photo is made in another process, so its buffers stay out of our RSS.
if (values['make-photo']) {
  writeFileSync(values['make-photo'], await photo(WIDTH, HEIGHT, 90))
  process.exit(0)
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`
const kb = (bytes: number) => `${(bytes / 1e3).toFixed(0)} kB`
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ')
const name = (v: PlannedVariant) => `${v.format} ${v.width}x${v.height}${v.isPrimary ? ' (primary)' : ''}`

/** CPU seconds every process on the machine spent so far (Linux /proc/stat), to spot a disturbed run. */
function machineCpu(): number {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
    const idle = fields[3]! + (fields[4] ?? 0)
    return (fields.reduce((a, b) => a + b, 0) - idle) / 100 // USER_HZ
  } catch {
    return Number.NaN
  }
}
const ownCpu = () => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1e6
}

/** More than half a CPU-second used by others during a run: its times are not this code's alone. */
const disturbed = (run: { othersCpu: number }) => run.othersCpu > 0.5

/** Drops what earlier phases left behind (JS garbage, freed native memory), so each phase starts level. */
function settle() {
  Bun.gc(true)
  releaseNativeMemory()
}

/** Peak of process.memoryUsage().rss, sampled every 20 ms while running. */
class RssSampler {
  peak = 0
  #timer: ReturnType<typeof setInterval> | undefined
  start() {
    this.peak = process.memoryUsage().rss
    this.#timer = setInterval(() => (this.peak = Math.max(this.peak, process.memoryUsage().rss)), 20)
    return this
  }
  stop() {
    clearInterval(this.#timer)
    this.peak = Math.max(this.peak, process.memoryUsage().rss)
    return this.peak
  }
}

const work = mkdtempSync(join(os.tmpdir(), 'spaces-upload-bench-'))
const upload = join(work, 'photo.jpg')
const child = Bun.spawnSync([process.execPath, import.meta.path, '--make-photo', upload], { stdout: 'inherit', stderr: 'inherit' })
if (child.exitCode !== 0) throw new Error('making the test photo failed')

interface Run {
  normaliseMs: number
  deriveMs: number
  totalMs: number
  originalPath: string
  variants: Variant[]
  perVariant: Map<string, number>
  peakRss: number
  startRss: number
  /** CPU seconds other processes used meanwhile: more than a few tenths means a disturbed figure. */
  othersCpu: number
}

/** One upload end to end, into fresh directories (as a new content hash would get). */
async function pipeline(file: string, encoders = ENCODERS): Promise<Run> {
  const root = mkdtempSync(join(work, 'run-'))
  settle()
  const startRss = process.memoryUsage().rss
  const sampler = new RssSampler().start()
  const [machine0, own0] = [machineCpu(), ownCpu()]
  const t0 = performance.now()
  const n = await normalise(file, join(root, 'storage'))
  const t1 = performance.now()
  const perVariant = new Map<string, number>()
  const variants = await writeDerivatives(n.originalPath, join(root, 'media'), 'genesis', n, { encoders, onVariant: (v, ms) => perVariant.set(v.path, ms) })
  const t2 = performance.now()
  const othersCpu = machineCpu() - machine0 - (ownCpu() - own0)
  return { normaliseMs: t1 - t0, deriveMs: t2 - t1, totalMs: t2 - t0, originalPath: n.originalPath, variants, perVariant, peakRss: sampler.stop(), startRss, othersCpu }
}

type Raw = { data: Buffer; info: { width: number; height: number; channels: 1 | 2 | 3 | 4 } }
const resize = async (from: Raw, to: { width: number; height: number }): Promise<Raw> => {
  const { data, info } = await sharp(from.data, { raw: from.info }).resize(to.width, to.height, { fit: 'fill' }).raw().toBuffer({ resolveWithObject: true })
  return { data, info: { width: info.width, height: info.height, channels: info.channels } }
}
const decode = async (input: string | Raw, rotate = false): Promise<Raw> => {
  const image = typeof input === 'string' ? sharp(input) : sharp(input.data, { raw: input.info })
  const { data, info } = await (rotate ? image.rotate() : image).toColourspace('srgb').raw().toBuffer({ resolveWithObject: true })
  return { data, info: { width: info.width, height: info.height, channels: info.channels } }
}

/** The pipeline's own encoder settings for one planned variant, from raw pixels. */
function encode(from: Raw, v: PlannedVariant, avifEffort = AVIF_EFFORT) {
  const image = sharp(from.data, { raw: from.info }).resize(v.width, v.height, { fit: 'fill' })
  const byFormat: Record<Format, () => ReturnType<typeof image.avif>> = {
    avif: () => image.avif({ quality: QUALITY.avif, effort: avifEffort }),
    webp: () => image.webp({ quality: QUALITY.webp }),
    jpeg: () => image.flatten({ background: '#ffffff' }).jpeg({ quality: QUALITY.jpeg, mozjpeg: true }),
  }
  return byFormat[v.format]()
}

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now()
  const result = await f()
  return [result, performance.now() - t]
}

/** Runs the jobs `width` at a time (the benchmark's own pool, for the comparisons). */
async function pool<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const results: T[] = []
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < jobs.length) {
      const i = next++
      results[i] = await jobs[i]!()
    }
  }))
  return results
}

const uploadBytes = statSync(upload).size
console.log(`upload bench: ${WIDTH}x${HEIGHT} photo-like JPEG q90, ${(uploadBytes / 1e6).toFixed(2)} MB`)
console.log(`  bun ${Bun.version}, sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}, ${os.availableParallelism()} cores, load ${load()}`)
console.log(
  `  settings: original JPEG q${ORIGINAL_JPEG.quality}, AVIF q${QUALITY.avif} effort ${AVIF_EFFORT}, WebP q${QUALITY.webp}, JPEG q${QUALITY.jpeg} mozjpeg; ` +
    `sharp.concurrency ${sharp.concurrency()}, ${ENCODERS} encoders`,
)

// Warm-up: libraries loaded and encoders initialised, as in a server that has run before.
const warm = join(work, 'warm.jpg')
writeFileSync(warm, await photo(640, 427))
await pipeline(warm)

const runs: Run[] = []
for (let i = 0; i < Number(values.runs); i++) {
  const run = await pipeline(upload)
  runs.push(run)
  console.log(
    `  run ${i + 1}: normalise ${s(run.normaliseMs)} + derivatives ${s(run.deriveMs)} = ${s(run.totalMs)}, peak RSS ${mb(run.peakRss)} (from ${mb(run.startRss)}), ` +
      `other processes ${run.othersCpu.toFixed(1)} CPU-s${disturbed(run) ? ' (disturbed)' : ''}`,
  )
}
const maxRss = process.resourceUsage().maxRSS * 1024
const quiet = runs.filter((r) => !disturbed(r))
const counted = quiet.length > 0 ? quiet : runs
const last = runs.at(-1)!
const total = median(counted.map((r) => r.totalMs))
const peakRss = Math.max(...runs.map((r) => r.peakRss))

// Floor: each encode alone, back to back, from pixels decoded beforehand (decoding not timed).
settle()
const uploaded = await decode(upload, true)
const [floorMachine0, floorOwn0] = [machineCpu(), ownCpu()]
const [, originalMs] = await timed(() => sharp(uploaded.data, { raw: uploaded.info }).jpeg({ ...ORIGINAL_JPEG, chromaSubsampling: '4:2:0' }).toBuffer())
const original = await decode(last.originalPath)
const plan = planVariants(original.info.width, original.info.height)
const alone: number[] = []
for (const v of plan) alone.push((await timed(() => encode(original, v).toBuffer()))[1])
const floor = originalMs + alone.reduce((a, b) => a + b, 0)
const floorOthers = machineCpu() - floorMachine0 - (ownCpu() - floorOwn0)

console.log()
if (quiet.length === 0) console.log('WARNING: every run was disturbed by other processes; the times below are not the machine’s')
console.log(`total ${s(total)} (median of ${counted.length}${quiet.length > 0 ? ' undisturbed' : ', all disturbed'}; goal ≤ ${s(GOAL.totalMs)}, floor ${s(floor)}, ratio ${(total / floor).toFixed(2)} ≤ ${GOAL.ratio})`)
console.log(`  normalise ${s(median(counted.map((r) => r.normaliseMs)))} (the original's encode alone: ${s(originalMs)}), derivatives ${s(median(counted.map((r) => r.deriveMs)))}`)
const variantsAlone = floor - originalMs
const bound = originalMs + Math.max(Math.max(...alone), variantsAlone / 2)
console.log(
  `  the floor is one core, back to back; on 2 cores the same encodes need at least ${s(bound)} ` +
    `(original ${s(originalMs)} + max(longest ${s(Math.max(...alone))}, half the rest ${s(variantsAlone / 2)})): ratio to that ${(total / bound).toFixed(2)}`,
)
console.log(`  floor measured while other processes used ${floorOthers.toFixed(1)} CPU-s`)
console.log(`peak RSS ${mb(peakRss)} sampled every 20 ms, maxRSS ${mb(maxRss)} (goal < ${GOAL.rssMb} MB; ${mb(runs[0]!.startRss)} before the first run)`)
console.log(`original ${kb(statSync(last.originalPath).size)} (upload ${kb(uploadBytes)})`)
console.log()
console.log('variant                    bytes     in pipeline   alone')
plan.forEach((v, i) => {
  const written = last.variants.find((w) => w.format === v.format && w.width === v.width)!
  console.log(`  ${name(v).padEnd(26)} ${kb(written.bytes).padStart(8)}   ${s(last.perVariant.get(written.path)!).padStart(8)}   ${s(alone[i]!).padStart(7)}`)
})

if (!values['no-reference']) {
  // AVIF at sharp's default effort (4), same quality, same pixels: the bytes reference.
  const avifs = plan.filter((v) => v.format === 'avif')
  const reference = await pool(avifs.map((v) => async () => (await encode(original, v, 4).toBuffer()).length), ENCODERS)
  const ours = avifs.map((v) => last.variants.find((w) => w.format === 'avif' && w.width === v.width)!.bytes)
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
  const extra = sum(ours) / sum(reference) - 1
  console.log()
  console.log(`AVIF bytes ${kb(sum(ours))} at effort ${AVIF_EFFORT} vs ${kb(sum(reference))} at effort 4: ${pct(extra)} (goal ≤ +${GOAL.avifExtra * 100}%)`)
  avifs.forEach((v, i) => console.log(`  ${String(v.width).padStart(4)} px: ${kb(ours[i]!)} vs ${kb(reference[i]!)} (${pct(ours[i]! / reference[i]! - 1)})`))
}

if (values.efforts) {
  // The AVIF set, sequentially, per effort, on this photo and on a smooth one (blurred: no grain,
  // soft gradients, like sky, walls or a defocused background), where low efforts lose the most.
  const smooth = await decode({ data: await sharp(original.data, { raw: original.info }).blur(8).raw().toBuffer(), info: original.info })
  const avifs = plan.filter((v) => v.format === 'avif')
  console.log()
  console.log('AVIF effort trade-off (all AVIF sizes, one after another, quality ' + QUALITY.avif + ')')
  for (const [label, pixels] of [['photo', original], ['smooth', smooth]] as const) {
    const rows: { effort: number; ms: number; bytes: number }[] = []
    for (const effort of [0, 1, 2, 3, 4]) {
      let ms = 0
      let bytes = 0
      for (const v of avifs) {
        const [buffer, t] = await timed(() => encode(pixels, v, effort).toBuffer())
        ms += t
        bytes += buffer.length
      }
      rows.push({ effort, ms, bytes })
    }
    const ref = rows.at(-1)!.bytes
    for (const r of rows) console.log(`  ${label.padEnd(6)} effort ${r.effort}: ${s(r.ms).padStart(7)}  ${kb(r.bytes).padStart(8)}  ${pct(r.bytes / ref - 1)} vs effort 4`)
  }
}

if (values.matrix) {
  // Each configuration --runs times, interleaved so a disturbance spreads over all; medians shown.
  const repeat = Number(values.runs)
  const cost = (v: PlannedVariant) => (v.format === 'avif' ? 6 : 1) * v.width * v.height
  /** The alternative to one decode per size: decode the original once, resize every size in memory. */
  const decodeOnce = async () => {
    const dir = mkdtempSync(join(work, 'once-'))
    settle()
    const startRss = process.memoryUsage().rss
    const sampler = new RssSampler().start()
    const [machine0, own0] = [machineCpu(), ownCpu()]
    const [, deriveMs] = await timed(async () => {
      const full = await decode(last.originalPath)
      const sizes = new Map<string, Promise<Raw>>()
      const sized = (v: PlannedVariant) => {
        const key = `${v.width}x${v.height}`
        if (!sizes.has(key)) sizes.set(key, resize(full, v))
        return sizes.get(key)!
      }
      const jobs = [...plan].sort((a, b) => cost(b) - cost(a)).map((v) => async () => encode(await sized(v), v).toFile(join(dir, `${v.width}.${v.format}`)))
      await pool(jobs, ENCODERS)
    })
    return { deriveMs, peakRss: sampler.stop(), startRss, othersCpu: machineCpu() - machine0 - (ownCpu() - own0) }
  }
  const configs = [
    ...[1, 2].flatMap((threads) => [1, 2].map((encoders) => ({ label: `concurrency ${threads}, ${encoders} encoder(s), one decode per size`, threads, encoders, once: false }))),
    { label: `concurrency 1, ${ENCODERS} encoder(s), decode once + resize in memory`, threads: 1, encoders: ENCODERS, once: true },
  ]
  const results = configs.map(() => [] as { deriveMs: number; peakRss: number; startRss: number; othersCpu: number }[])
  const discarded = configs.map(() => 0)
  for (let i = 0; i < repeat; i++) {
    for (const [c, config] of configs.entries()) {
      sharp.concurrency(config.threads)
      // A run another process disturbed is done again, up to twice.
      for (let attempt = 0; ; attempt++) {
        const run = config.once ? await decodeOnce() : await pipeline(upload, config.encoders)
        if (!disturbed(run) || attempt === 2) {
          results[c]!.push(run)
          break
        }
        discarded[c]!++
      }
    }
  }
  sharp.concurrency(1)
  console.log()
  console.log(`derivatives of the same original, by configuration (median of ${repeat}; RSS growth from each run's start)`)
  for (const [c, config] of configs.entries()) {
    const rs = results[c]!
    const noisy = rs.filter(disturbed).length
    console.log(
      `  ${config.label.padEnd(60)} ${s(median(rs.map((r) => r.deriveMs)))}  RSS +${mb(median(rs.map((r) => r.peakRss - r.startRss)))}` +
        `${discarded[c] ? `, ${discarded[c]} disturbed run(s) redone` : ''}${noisy ? `, ${noisy} still disturbed` : ''}`,
    )
  }
}

console.log()
console.log(`load ${load()} at the end`)
rmSync(work, { recursive: true, force: true })
