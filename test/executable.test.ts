/**
 * The compiled executable must run alone: no node_modules, minimal env.
 * Builds scripts/sharp-probe.ts with scripts/build.ts (same plugin and
 * options as dist/spaces-api) and runs it from an empty directory.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sharp } from '../src/lib/sharp.ts'

const root = path.resolve(import.meta.dir, '..')
const tempDirs: string[] = []
let binary = ''

function tempDir(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `spaces-api-exe-${label}-`))
  tempDirs.push(dir)
  return dir
}

/** Copies only the binary into a fresh empty directory. */
function isolatedCopy(): { dir: string; exe: string } {
  const dir = tempDir('run')
  const exe = path.join(dir, 'sharp-probe')
  fs.copyFileSync(binary, exe)
  fs.chmodSync(exe, 0o755)
  return { dir, exe }
}

interface ProbeResult {
  ok: boolean
  vips: string
  sharp: string
  error?: string
  embedded: { dir: string; written: string[]; loadMs: number } | null
  formats: { avif: number; webp: number; jpeg: number }
}

function parseProbe(stdout: string, stderr: string, exitCode: number | null): ProbeResult {
  const line = stdout.trim().split('\n').at(-1) ?? ''
  let result: ProbeResult
  try {
    result = JSON.parse(line) as ProbeResult
  } catch {
    throw new Error(`probe printed no JSON (exit ${exitCode})\nstdout: ${stdout}\nstderr: ${stderr}`)
  }
  if (!result.ok || exitCode !== 0) throw new Error(`probe failed (exit ${exitCode}): ${result.error ?? stderr}`)
  return result
}

function runProbe(env: Record<string, string>, args: string[] = []): ProbeResult {
  const { dir, exe } = isolatedCopy()
  const res = Bun.spawnSync([exe, ...args], { cwd: dir, env, stdout: 'pipe', stderr: 'pipe', timeout: 60_000 })
  return parseProbe(res.stdout.toString(), res.stderr.toString(), res.exitCode)
}

function expectFormats(result: ProbeResult): void {
  expect(result.ok).toBe(true)
  expect(result.vips).toMatch(/^\d+\.\d+\.\d+/)
  expect(result.formats.avif).toBeGreaterThan(0)
  expect(result.formats.webp).toBeGreaterThan(0)
  expect(result.formats.jpeg).toBeGreaterThan(0)
}

function runtimeDirFiles(dir: string): string[] {
  return fs.readdirSync(dir).sort()
}

beforeAll(() => {
  const buildDir = tempDir('build')
  binary = path.join(buildDir, 'sharp-probe')
  const res = Bun.spawnSync(
    [process.execPath, 'run', 'scripts/build.ts', '--entry', 'scripts/sharp-probe.ts', '--outfile', binary, '--quiet'],
    { cwd: root, stdout: 'pipe', stderr: 'pipe', timeout: 110_000 },
  )
  if (res.exitCode !== 0 || !fs.existsSync(binary)) {
    throw new Error(`build failed (exit ${res.exitCode}):\n${res.stdout.toString()}\n${res.stderr.toString()}`)
  }
  // One executable, nothing else (the source map is embedded).
  expect(fs.readdirSync(buildDir)).toEqual(['sharp-probe'])
}, 120_000)

afterAll(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true })
})

describe('compiled executable', () => {
  test('runs alone in an empty directory with a minimal environment and encodes AVIF/WebP/JPEG', async () => {
    const { dir, exe } = isolatedCopy()
    const outDir = tempDir('out')
    const res = Bun.spawnSync([exe, '--out', outDir], {
      cwd: dir,
      env: { PATH: '/usr/bin:/bin', HOME: dir },
      stdout: 'pipe',
      stderr: 'pipe',
      timeout: 60_000,
    })
    const result = parseProbe(res.stdout.toString(), res.stderr.toString(), res.exitCode)
    expectFormats(result)
    expect(result.embedded).not.toBeNull()
    // Nothing is written next to the binary.
    expect(fs.readdirSync(dir)).toEqual(['sharp-probe'])

    const avif = fs.readFileSync(path.join(outDir, 'probe.avif'))
    expect(avif.byteLength).toBe(result.formats.avif)
    const meta = await sharp(avif).metadata()
    expect(meta.format).toBe('heif')
    expect(meta.compression).toBe('av1')
    expect(meta.width).toBe(640)
    expect(meta.height).toBe(480)
  }, 120_000)

  test('extracts once, reuses the runtime dir on the next start and repairs a damaged copy', () => {
    const tmp = tempDir('tmpdir')
    const env = { PATH: '/usr/bin:/bin', HOME: tempDir('home'), TMPDIR: tmp }

    const first = runProbe(env)
    expectFormats(first)
    const runtimeDir = first.embedded?.dir ?? ''
    expect(runtimeDir.startsWith(tmp + path.sep)).toBe(true)
    expect(first.embedded?.written.length).toBeGreaterThanOrEqual(2)
    expect(fs.statSync(runtimeDir).mode & 0o777).toBe(0o700)
    expect(fs.statSync(path.dirname(runtimeDir)).mode & 0o777).toBe(0o700)
    const files = runtimeDirFiles(runtimeDir)
    expect(files.some((f) => f.startsWith('libvips-cpp.so'))).toBe(true)
    expect(files).toContain('sharp-linux-x64.node')

    const second = runProbe(env)
    expectFormats(second)
    expect(second.embedded?.dir).toBe(runtimeDir)
    expect(second.embedded?.written).toEqual([])

    // A truncated library (e.g. disk full during a previous start) is rewritten.
    const lib = path.join(runtimeDir, files.find((f) => f.startsWith('libvips-cpp.so'))!)
    fs.chmodSync(lib, 0o600)
    fs.truncateSync(lib, 4096)
    const third = runProbe(env)
    expectFormats(third)
    expect(third.embedded?.written).toEqual([path.basename(lib)])
    expect(runtimeDirFiles(runtimeDir)).toEqual(files)
  }, 120_000)

  test('several instances starting at once share one runtime dir', async () => {
    const tmp = tempDir('tmpdir')
    const env = { PATH: '/usr/bin:/bin', HOME: tempDir('home'), TMPDIR: tmp }
    // Copy first, then start all at once so the extractions really overlap.
    const copies = Array.from({ length: 4 }, () => isolatedCopy())
    const runs = copies.map(({ dir, exe }) => Bun.spawn([exe], { cwd: dir, env, stdout: 'pipe', stderr: 'pipe' }))
    const results = await Promise.all(
      runs.map(async (p) => {
        const [stdout, stderr, code] = await Promise.all([
          new Response(p.stdout).text(),
          new Response(p.stderr).text(),
          p.exited,
        ])
        return parseProbe(stdout, stderr, code)
      }),
    )
    const dirs = new Set(results.map((r) => r.embedded?.dir))
    expect(dirs.size).toBe(1)
    for (const r of results) expectFormats(r)
    // At least one of them extracted; the others reused or raced to an identical rename.
    expect(results.some((r) => (r.embedded?.written.length ?? 0) > 0)).toBe(true)
    // No temp files left behind by the atomic writes.
    const runtimeDir = [...dirs][0]!
    expect(runtimeDirFiles(runtimeDir).filter((f) => f.endsWith('.tmp'))).toEqual([])
  }, 120_000)

  test('refuses a runtime root that others can write to and falls back to ~/.cache', () => {
    const tmp = tempDir('tmpdir')
    const home = tempDir('home')
    const uid = process.getuid?.() ?? 0
    const shared = path.join(tmp, `spaces-api-${uid}`)
    fs.mkdirSync(shared)
    fs.chmodSync(shared, 0o777)
    const result = runProbe({ PATH: '/usr/bin:/bin', HOME: home, TMPDIR: tmp })
    expectFormats(result)
    expect(result.embedded?.dir.startsWith(path.join(home, '.cache') + path.sep)).toBe(true)
    expect(fs.readdirSync(shared)).toEqual([])
  }, 120_000)
})
