/**
 * Loader for the sharp native addon + libvips when running as a single
 * executable built by `bun build --compile` (see scripts/build.ts and
 * docs/executable.md).
 *
 * Nothing in here runs when the app is started from source: only the
 * build-time plugin (scripts/sharp-embed-plugin.ts) generates a module that
 * calls `loadEmbeddedSharpAddon()`, and that module replaces
 * `sharp/lib/sharp.js` inside the bundle.
 *
 * Steps (each one is needed, see docs/executable.md):
 *  1. pick a private runtime directory `<tmp>/spaces-api-<uid>/<id>` (mode
 *     0700, owned by us; `<id>` = sharp version + content hash of the files),
 *  2. write each embedded shared library there under its SONAME unless an
 *     intact copy (size + sha256) is already present; writes go to a unique
 *     temp name first and are then renamed, so concurrent starts are safe,
 *  3. `dlopen` the libraries (dependencies first) with bun:ffi so that the
 *     addon's DT_NEEDED entry (e.g. libvips-cpp.so.8.17.3) resolves to the
 *     already-loaded library instead of being searched via its RPATH,
 *  4. load the addon from the runtime directory with process.dlopen.
 */
import { dlopen } from 'bun:ffi'
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export interface EmbeddedNativeFile {
  /** File name to write in the runtime directory (the SONAME for libraries). */
  name: string
  /** Path of the embedded copy (`/$bunfs/...` in a compiled executable). */
  embeddedPath: string
  size: number
  sha256: string
}

export interface EmbeddedSharpManifest {
  /** Runtime directory name, e.g. `sharp-0.34.5-linux-x64-<hash>`. */
  id: string
  /** Shared libraries needed by the addon, in load order (dependencies first). */
  libraries: readonly EmbeddedNativeFile[]
  /** The sharp N-API addon (`sharp-linux-x64.node`). */
  addon: EmbeddedNativeFile
  /** A symbol that each library exports; bun:ffi dlopen needs at least one. */
  probeSymbols: Readonly<Record<string, string>>
}

export interface EmbeddedSharpRuntime {
  /** Directory the native files were loaded from. */
  dir: string
  /** Files written during this start (empty when everything was reused). */
  written: string[]
  /** Milliseconds spent preparing and loading the native files. */
  loadMs: number
}

// Keep the bun:ffi handles reachable for the life of the process so the
// libraries are never dlclose()d underneath the addon.
const keepAlive: unknown[] = []
let runtime: EmbeddedSharpRuntime | null = null

/** Where the embedded native files were loaded from; null when running from source. */
export function embeddedSharpRuntime(): EmbeddedSharpRuntime | null {
  return runtime
}

/** Loads the embedded libvips + sharp addon and returns the addon's exports. */
export function loadEmbeddedSharpAddon(manifest: EmbeddedSharpManifest): unknown {
  const started = performance.now()
  const failures: string[] = []
  for (const base of candidateBaseDirs()) {
    let dir = ''
    const written: string[] = []
    try {
      dir = ensurePrivateDir(path.join(base, `spaces-api-${currentUid()}`))
      dir = ensurePrivateDir(path.join(dir, manifest.id))
      for (const file of [...manifest.libraries, manifest.addon]) {
        if (materialize(dir, file)) written.push(file.name)
      }
      // dlopen the first library; if this fails (e.g. a noexec mount) nothing
      // has been loaded yet and the next candidate directory can be tried.
      openLibrary(dir, manifest.libraries[0], manifest)
    } catch (err) {
      failures.push(`${base}: ${errorMessage(err)}`)
      // Do not leave unusable copies behind (a noexec tmpfs would keep ~17 MB in RAM).
      for (const name of written) fs.rmSync(path.join(dir, name), { force: true })
      continue
    }
    // From here on a library is loaded from `dir`; do not retry elsewhere,
    // a second copy of the same library would be loaded next to the first.
    try {
      for (const lib of manifest.libraries.slice(1)) openLibrary(dir, lib, manifest)
      const addon = openAddon(path.join(dir, manifest.addon.name))
      runtime = { dir, written, loadMs: Math.round(performance.now() - started) }
      return addon
    } catch (err) {
      failures.push(`${dir}: ${errorMessage(err)}`)
      break
    }
  }
  throw new Error(
    [
      'Could not load the embedded sharp/libvips native libraries.',
      ...failures.map((f) => `  - ${f}`),
      'Hints: the runtime directory must be writable and not mounted noexec (set TMPDIR to move it);',
      'the host needs glibc >= 2.26 and libstdc++.so.6 (Debian/Ubuntu: libstdc++6) on an x86-64-v2 CPU.',
    ].join('\n'),
  )
}

function candidateBaseDirs(): string[] {
  const dirs = [os.tmpdir()]
  try {
    dirs.push(path.join(os.homedir(), '.cache'))
  } catch {
    // no home directory: only the temp dir is tried
  }
  return [...new Set(dirs.map((d) => path.resolve(d)))]
}

function currentUid(): number {
  return typeof process.getuid === 'function' ? process.getuid() : 0
}

/**
 * Creates `dir` with mode 0700 (parents as needed) or accepts an existing one
 * only if it is a real directory (not a symlink) owned by us and not
 * accessible to group/others. In a shared /tmp this stops another user from
 * planting libraries that we would then load.
 */
function ensurePrivateDir(dir: string): string {
  fs.mkdirSync(path.dirname(dir), { recursive: true })
  try {
    fs.mkdirSync(dir, { mode: 0o700 })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  const st = fs.lstatSync(dir)
  if (!st.isDirectory()) throw new Error(`${dir} exists and is not a directory`)
  if (st.uid !== currentUid()) throw new Error(`${dir} is owned by uid ${st.uid}, not by us`)
  if ((st.mode & 0o077) !== 0) throw new Error(`${dir} has mode ${(st.mode & 0o777).toString(8)}, expected 700`)
  return dir
}

/** Ensures `dir/file.name` holds exactly the embedded bytes. Returns true if it had to be written. */
function materialize(dir: string, file: EmbeddedNativeFile): boolean {
  const target = path.join(dir, file.name)
  if (isIntact(target, file)) return false

  const bytes = fs.readFileSync(file.embeddedPath)
  if (bytes.byteLength !== file.size || sha256(bytes) !== file.sha256) {
    throw new Error(`embedded ${file.name} does not match its build-time hash`)
  }
  const tmp = path.join(dir, `.${file.name}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
  try {
    const fd = fs.openSync(tmp, 'wx', 0o500)
    try {
      let off = 0
      while (off < bytes.byteLength) off += fs.writeSync(fd, bytes, off, bytes.byteLength - off)
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    // Atomic replace: a concurrent start either sees the old complete file,
    // or ours; identical bytes either way. A process that already mapped an
    // older inode keeps using it.
    fs.renameSync(tmp, target)
  } catch (err) {
    fs.rmSync(tmp, { force: true })
    throw err
  }
  return true
}

function isIntact(target: string, file: EmbeddedNativeFile): boolean {
  let st: fs.Stats
  try {
    st = fs.lstatSync(target)
  } catch {
    return false
  }
  if (!st.isFile() || st.size !== file.size) return false
  try {
    return sha256(fs.readFileSync(target)) === file.sha256
  } catch {
    return false
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

function openLibrary(dir: string, lib: EmbeddedNativeFile | undefined, manifest: EmbeddedSharpManifest): void {
  if (!lib) return
  const symbol = manifest.probeSymbols[lib.name]
  if (!symbol) throw new Error(`no probe symbol for ${lib.name}`)
  // The signature is irrelevant; the symbol is only looked up, never called.
  keepAlive.push(dlopen(path.join(dir, lib.name), { [symbol]: { args: [], returns: 'void' } }))
}

function openAddon(file: string): unknown {
  const mod: { exports: Record<string, unknown> } = { exports: {} }
  process.dlopen(mod, file, os.constants.dlopen.RTLD_NOW)
  const addon = mod.exports
  // Same check as sharp/lib/sharp.js: the prebuilt linux-x64 binaries need x86-64-v2.
  const isV2 = addon['_isUsingX64V2']
  if (typeof isV2 === 'function' && !isV2()) {
    throw Object.assign(new Error('Prebuilt binaries for linux-x64 require v2 microarchitecture'), {
      code: 'Unsupported CPU',
    })
  }
  return addon
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
