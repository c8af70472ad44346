/**
 * Builds the single self-contained executable (see docs/executable.md).
 *
 *   bun run scripts/build.ts [--entry src/main.ts] [--outfile dist/spaces-api] [--no-minify]
 *
 * sharp's native addon and libvips are embedded by scripts/sharp-embed-plugin.ts.
 */
import { parseArgs } from 'node:util'
import fs from 'node:fs'
import path from 'node:path'
import { sharpEmbedPlugin, type SharpEmbedInfo } from './sharp-embed-plugin.ts'

const root = path.resolve(import.meta.dir, '..')

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    entry: { type: 'string', default: 'src/main.ts' },
    outfile: { type: 'string', default: 'dist/spaces-api' },
    minify: { type: 'boolean', default: true },
    'no-minify': { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
  },
  strict: true,
})

const entry = path.resolve(root, values.entry)
const outfile = path.resolve(root, values.outfile)
const minify = values.minify && !values['no-minify']
const log = (msg: string) => {
  if (!values.quiet) console.log(msg)
}

function gitSha(): string {
  try {
    const res = Bun.spawnSync(['git', 'rev-parse', '--short', 'HEAD'], { cwd: root, stdout: 'pipe', stderr: 'ignore' })
    const sha = res.stdout.toString().trim()
    return res.exitCode === 0 && /^[0-9a-f]{4,40}$/.test(sha) ? sha : 'unknown'
  } catch {
    return 'unknown'
  }
}

const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }
const sha = gitSha()

if (!fs.existsSync(entry)) {
  console.error(`build: entry ${path.relative(root, entry)} does not exist`)
  process.exit(1)
}
fs.mkdirSync(path.dirname(outfile), { recursive: true })

let info: SharpEmbedInfo | undefined
const started = performance.now()
const result = await Bun.build({
  // The SQLite checkpointer runs as a Worker (src/db/sqlite.ts); a worker must be an entrypoint of its own.
  entrypoints: [entry, path.join(root, 'src/db/sqlite-checkpointer.ts')],
  target: 'bun',
  format: 'esm',
  minify: minify ? { whitespace: true, syntax: true, identifiers: false } : false,
  // Embedded into the executable so stack traces point at the TypeScript sources.
  sourcemap: 'linked',
  define: {
    __BUILD_SHA__: JSON.stringify(sha),
    __BUILD_VERSION__: JSON.stringify(pkg.version),
  },
  plugins: [sharpEmbedPlugin({ root, onInfo: (i) => (info = i) })],
  compile: {
    target: 'bun-linux-x64',
    outfile,
    // src/main.ts documents a .env file in the working directory as a config source.
    autoloadDotenv: true,
    // bunfig.toml only configures `bun install` / `bun test`; the service must not read one from its cwd.
    autoloadBunfig: false,
  },
})

if (!result.success) {
  for (const message of result.logs) console.error(message)
  process.exit(1)
}
for (const message of result.logs) console.warn(message)
// The source map is embedded in the executable (stack traces show src/… positions);
// the extra .map file Bun writes next to it is not needed.
for (const output of result.outputs) {
  if (output.kind === 'sourcemap') fs.rmSync(output.path, { force: true })
}

const size = fs.statSync(outfile).size
log(
  `built ${path.relative(root, outfile) || outfile} from ${path.relative(root, entry)} ` +
    `(${(size / 1024 / 1024).toFixed(1)} MiB, ${Math.round(performance.now() - started)} ms, ` +
    `version ${pkg.version}, sha ${sha}, minify ${minify})`,
)
if (info) {
  log(
    `  sharp ${info.sharpVersion}: embedded ${[...info.libraries, info.addon].join(', ')}; ` +
      `host must provide ${info.systemLibraries.join(', ')}`,
  )
}
