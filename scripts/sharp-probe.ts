/**
 * Smoke test for sharp in the compiled executable (and from source):
 *
 *   bun run scripts/build.ts --entry scripts/sharp-probe.ts --outfile dist/sharp-probe
 *   ./dist/sharp-probe
 *
 * Prints one JSON line: { ok, vips, sharp, formats: { avif, webp, jpeg } (bytes), ... }.
 * Pass --out <dir> to also write the three images there.
 */
import { sharp, sharpVersions, embeddedSharpRuntime } from '../src/lib/sharp.ts'
import { buildSha, buildVersion } from '../src/build-info.ts'

async function main(): Promise<void> {
  const outIdx = process.argv.indexOf('--out')
  const outDir = outIdx > 0 ? process.argv[outIdx + 1] : undefined

  const started = performance.now()
  const source = sharp({
    create: { width: 800, height: 600, channels: 3, background: { r: 40, g: 90, b: 160 }, noise: { type: 'gaussian', mean: 128, sigma: 30 } },
  })
  const resized = await source.resize({ width: 640 }).png().toBuffer()
  const [avif, webp, jpeg] = await Promise.all([
    sharp(resized).avif({ quality: 50, effort: 2 }).toBuffer(),
    sharp(resized).webp({ quality: 75 }).toBuffer(),
    sharp(resized).jpeg({ quality: 80, mozjpeg: true }).toBuffer(),
  ])
  if (outDir) {
    await Bun.write(`${outDir}/probe.avif`, avif)
    await Bun.write(`${outDir}/probe.webp`, webp)
    await Bun.write(`${outDir}/probe.jpg`, jpeg)
  }
  const versions = sharpVersions()
  const runtime = embeddedSharpRuntime()
  console.log(
    JSON.stringify({
      ok: true,
      vips: versions.vips,
      sharp: versions.sharp,
      build: { version: buildVersion, sha: buildSha },
      embedded: runtime ? { dir: runtime.dir, written: runtime.written, loadMs: runtime.loadMs } : null,
      formats: { avif: avif.byteLength, webp: webp.byteLength, jpeg: jpeg.byteLength },
      ms: Math.round(performance.now() - started),
    }),
  )
}

main().catch((err: unknown) => {
  console.log(JSON.stringify({ ok: false, error: err instanceof Error ? err.stack ?? err.message : String(err) }))
  process.exit(1)
})
