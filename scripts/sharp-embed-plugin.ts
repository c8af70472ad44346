/**
 * Bun.build plugin that makes sharp work inside a `bun build --compile`
 * executable (see docs/executable.md).
 *
 * - Finds sharp's prebuilt addon (@img/sharp-<platform>/lib/*.node) and the
 *   shared libraries it needs from @img/sharp-libvips-<platform>/lib, by
 *   reading DT_NEEDED / DT_SONAME from the ELF files (so a sharp bump that
 *   adds or renames a library is picked up, or fails the build loudly).
 * - Replaces `sharp/lib/sharp.js` (sharp's addon locator, which tries a list
 *   of require() paths that cannot exist in a single binary) with a module
 *   exporting the addon loaded by src/lib/sharp-native.ts from files embedded
 *   with `import ... with { type: "file" }`.
 * - Replaces the dynamic `require(\`@img/sharp-${platform}/versions\`)` in
 *   `sharp/lib/utility.js` with the static versions.json, so `sharp.versions`
 *   and the AVIF format aliases are the same as when running from source.
 */
import type { BunPlugin } from 'bun'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

const NAMESPACE = 'sharp-embedded'
const MANIFEST_SPECIFIER = 'sharp-embedded:manifest'

/** Libraries the executable takes from the host system (glibc + the C++ runtime). */
const SYSTEM_LIBRARIES = new Set([
  'libc.so.6',
  'libm.so.6',
  'libdl.so.2',
  'libpthread.so.0',
  'librt.so.1',
  'libresolv.so.2',
  'ld-linux-x86-64.so.2',
  'libstdc++.so.6',
  'libgcc_s.so.1',
])

/** One symbol each embedded library must export (bun:ffi dlopen needs at least one). */
const PROBE_SYMBOLS: Record<string, string> = {
  'libvips-cpp': 'vips_version',
  libvips: 'vips_version',
}

export interface SharpEmbedOptions {
  /** Project root used to resolve `sharp` (default: cwd). */
  root?: string
  /** Platform triple as used by sharp's packages (default: linux-x64). */
  platform?: string
}

export interface SharpEmbedInfo {
  sharpVersion: string
  id: string
  addon: string
  libraries: string[]
  systemLibraries: string[]
}

export interface ElfDynamicInfo {
  soname: string | null
  needed: string[]
}

/** Reads DT_SONAME and DT_NEEDED from a 64-bit little-endian ELF shared object. */
export function readElfDynamic(file: string): ElfDynamicInfo {
  const buf = fs.readFileSync(file)
  if (buf.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${file}: not an ELF file`)
  if (buf[4] !== 2 || buf[5] !== 1) throw new Error(`${file}: only ELF64 little-endian is supported`)
  const shoff = Number(buf.readBigUInt64LE(0x28))
  const shentsize = buf.readUInt16LE(0x3a)
  const shnum = buf.readUInt16LE(0x3c)
  const section = (i: number) => {
    const o = shoff + i * shentsize
    return {
      type: buf.readUInt32LE(o + 4),
      offset: Number(buf.readBigUInt64LE(o + 24)),
      size: Number(buf.readBigUInt64LE(o + 32)),
      link: buf.readUInt32LE(o + 40),
    }
  }
  for (let i = 0; i < shnum; i++) {
    const dyn = section(i)
    if (dyn.type !== 6 /* SHT_DYNAMIC */) continue
    const strtab = section(dyn.link)
    const str = (off: number) => {
      const start = strtab.offset + off
      return buf.toString('utf8', start, buf.indexOf(0, start))
    }
    const info: ElfDynamicInfo = { soname: null, needed: [] }
    for (let o = dyn.offset; o + 16 <= dyn.offset + dyn.size; o += 16) {
      const tag = buf.readBigInt64LE(o)
      if (tag === 0n) break
      const val = Number(buf.readBigUInt64LE(o + 8))
      if (tag === 1n) info.needed.push(str(val))
      else if (tag === 14n) info.soname = str(val)
    }
    return info
  }
  throw new Error(`${file}: no dynamic section`)
}

interface NativeFile {
  name: string
  source: string
  size: number
  sha256: string
}

function describe(name: string, source: string): NativeFile {
  const bytes = fs.readFileSync(source)
  return { name, source, size: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}

/** Collects what has to be embedded; throws if sharp's layout is not as expected. */
export function collectSharpNativeFiles(options: SharpEmbedOptions = {}) {
  const root = path.resolve(options.root ?? process.cwd())
  const platform = options.platform ?? 'linux-x64'
  const sharpPkgJson = fs.realpathSync(Bun.resolveSync('sharp/package.json', root))
  const sharpDir = path.dirname(sharpPkgJson)
  const sharpVersion: string = JSON.parse(fs.readFileSync(sharpPkgJson, 'utf8')).version

  const addonPkgDir = path.dirname(fs.realpathSync(Bun.resolveSync(`@img/sharp-${platform}/package`, sharpDir)))
  const libvipsPkgDir = path.dirname(
    fs.realpathSync(Bun.resolveSync(`@img/sharp-libvips-${platform}/package`, sharpDir)),
  )
  const libDir = path.join(libvipsPkgDir, 'lib')
  const versionsJson = path.join(libvipsPkgDir, 'versions.json')

  const addonSource = path.join(addonPkgDir, 'lib', `sharp-${platform}.node`)
  if (!fs.existsSync(addonSource)) throw new Error(`sharp addon not found at ${addonSource}`)

  // Walk DT_NEEDED from the addon; anything found in the libvips package is
  // embedded (dependencies first), anything else must be a known system library.
  const byName = new Map<string, string>()
  for (const entry of fs.readdirSync(libDir)) {
    const full = path.join(libDir, entry)
    if (!/\.so(\.|$)/.test(entry) || !fs.statSync(full).isFile()) continue
    byName.set(entry, full)
    const soname = readElfDynamic(full).soname
    if (soname) byName.set(soname, full)
  }
  const ordered: NativeFile[] = []
  const system = new Set<string>()
  const visiting = new Set<string>()
  const visit = (needed: string[], from: string) => {
    for (const name of needed) {
      if (ordered.some((f) => f.name === name)) continue
      const source = byName.get(name)
      if (!source) {
        if (!SYSTEM_LIBRARIES.has(name)) {
          throw new Error(`${from} needs ${name}, which is neither in ${libDir} nor a known system library`)
        }
        system.add(name)
        continue
      }
      if (visiting.has(name)) throw new Error(`dependency cycle at ${name}`)
      visiting.add(name)
      visit(readElfDynamic(source).needed, name)
      visiting.delete(name)
      ordered.push(describe(name, source))
    }
  }
  visit(readElfDynamic(addonSource).needed, path.basename(addonSource))
  if (ordered.length === 0) throw new Error(`${addonSource} does not link against any library from ${libDir}`)

  const addon = describe(path.basename(addonSource), addonSource)
  const probeSymbols: Record<string, string> = {}
  for (const lib of ordered) {
    const stem = lib.name.replace(/\.so(\..*)?$/, '')
    const symbol = PROBE_SYMBOLS[stem]
    if (!symbol) throw new Error(`no probe symbol known for ${lib.name}; add one to PROBE_SYMBOLS`)
    probeSymbols[lib.name] = symbol
  }
  const contentHash = createHash('sha256')
  for (const f of [...ordered, addon]) contentHash.update(`${f.name}\0${f.sha256}\0`)
  const id = `sharp-${sharpVersion}-${platform}-${contentHash.digest('hex').slice(0, 16)}`

  return { sharpDir, sharpVersion, platform, id, libraries: ordered, addon, probeSymbols, systemLibraries: [...system], versionsJson }
}

export function sharpEmbedPlugin(options: SharpEmbedOptions & { onInfo?: (info: SharpEmbedInfo) => void } = {}): BunPlugin {
  const root = path.resolve(options.root ?? process.cwd())
  const nativeModule = path.join(root, 'src', 'lib', 'sharp-native.ts')

  return {
    name: 'sharp-embed',
    setup(build) {
      const files = collectSharpNativeFiles({ ...options, root })
      options.onInfo?.({
        sharpVersion: files.sharpVersion,
        id: files.id,
        addon: files.addon.name,
        libraries: files.libraries.map((l) => l.name),
        systemLibraries: files.systemLibraries,
      })
      const sharpJs = path.join(files.sharpDir, 'lib', 'sharp.js')
      const utilityJs = path.join(files.sharpDir, 'lib', 'utility.js')

      // Filters are deliberately broad: a second copy of sharp in the bundle
      // (another version, or a path we did not expect) fails the build here
      // instead of failing at runtime in the executable.
      const sameFile = (a: string, b: string) => a === b || fs.realpathSync(a) === b
      const only = (expected: string, actual: string) => {
        if (!sameFile(actual, expected)) {
          throw new Error(`sharp-embed: bundle contains ${actual}, expected only ${expected} (two copies of sharp?)`)
        }
      }

      // 1. sharp's addon locator -> our embedded loader.
      build.onLoad({ filter: /[\\/]sharp[\\/]lib[\\/]sharp\.js$/ }, (args) => {
        only(sharpJs, args.path)
        return { contents: `module.exports = require(${JSON.stringify(MANIFEST_SPECIFIER)}).addon;\n`, loader: 'js' }
      })

      // 2. sharp.versions: static versions.json instead of a dynamic require.
      build.onLoad({ filter: /[\\/]sharp[\\/]lib[\\/]utility\.js$/ }, async (args) => {
        only(utilityJs, args.path)
        const source = await Bun.file(utilityJs).text()
        const dynamic = /require\(`@img\/sharp-\$\{runtimePlatform\}\/versions`\)/
        if (!dynamic.test(source)) {
          throw new Error(`sharp-embed: ${utilityJs} changed; update the versions patch in scripts/sharp-embed-plugin.ts`)
        }
        return { contents: source.replace(dynamic, `require(${JSON.stringify(files.versionsJson)})`), loader: 'js' }
      })

      // 3. The generated module: embeds the files and calls the loader.
      build.onResolve({ filter: new RegExp(`^${escapeRegExp(MANIFEST_SPECIFIER)}$`) }, () => ({
        path: files.id,
        namespace: NAMESPACE,
      }))
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, () => {
        const all = [...files.libraries, files.addon]
        const imports = all
          .map((f, i) => `import f${i} from ${JSON.stringify(f.source)} with { type: "file" };`)
          .join('\n')
        const entry = (f: NativeFile, i: number) =>
          `{ name: ${JSON.stringify(f.name)}, embeddedPath: f${i}, size: ${f.size}, sha256: ${JSON.stringify(f.sha256)} }`
        const contents = `${imports}
import { loadEmbeddedSharpAddon } from ${JSON.stringify(nativeModule)}
export const addon = loadEmbeddedSharpAddon({
  id: ${JSON.stringify(files.id)},
  libraries: [${files.libraries.map(entry).join(', ')}],
  addon: ${entry(files.addon, all.length - 1)},
  probeSymbols: ${JSON.stringify(files.probeSymbols)},
})
`
        return { contents, loader: 'ts' }
      })
    },
  }
}
