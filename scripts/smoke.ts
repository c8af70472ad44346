/**
 * Smoke test of the built executable (`bun run build` first): copied alone into an empty directory,
 * it must answer --help and --version, refuse a bad configuration, encode images (doctor), and
 * migrate and serve on SQLite and, when a MySQL server is reachable, on MySQL.
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { baseEnv, createTestDatabase, mysqlReachable } from '../test/harness.ts'

const binary = resolve(import.meta.dir, '../dist/spaces-api')
const dir = mkdtempSync(join(tmpdir(), 'spaces-smoke-'))
copyFileSync(binary, join(dir, 'spaces-api'))
Bun.spawnSync(['chmod', '+x', join(dir, 'spaces-api')])
const exe = join(dir, 'spaces-api')
let failures = 0

function check(name: string, ok: boolean, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`)
  if (!ok) failures++
}
const bare = { PATH: '/usr/bin:/bin', HOME: dir }
const run = (args: string[], env: Record<string, string>) => {
  const r = Bun.spawnSync([exe, ...args], { cwd: dir, env: { ...bare, ...env }, stdout: 'pipe', stderr: 'pipe' })
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() }
}

const help = run(['--help'], {})
check('--help', help.code === 0 && help.out.includes('reprocess'))
const version = run(['--version'], { GIT_SHA: 'smoke123' })
check('--version', version.code === 0 && version.out.includes('smoke123'), version.out.trim())
const bad = run(['migrate'], { JWT_ACCESS_SECRET: 'short' })
check('bad configuration refused with every problem', bad.code === 1 && bad.err.split('\n').filter((l) => /^\s+[A-Z_]+:/.test(l)).length >= 8)

async function serveOn(label: string, env: Record<string, string>) {
  const migrated = run(['migrate'], env)
  check(`migrate on ${label}`, migrated.code === 0, migrated.out.trim() || migrated.err.trim())
  const port = 20000 + Math.floor(Math.random() * 20000)
  const child = Bun.spawn([exe, 'serve'], { cwd: dir, env: { ...bare, ...env, PORT: String(port), LOG_LEVEL: 'debug' }, stdout: 'pipe', stderr: 'pipe' })
  // Read the log as it comes: a full pipe would block the server's (synchronous) log writes.
  const output = new Response(child.stdout).text()
  let status = 0
  for (let i = 0; i < 100 && status === 0; i++) {
    await Bun.sleep(100)
    status = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status, () => 0)
  }
  check(`serve on ${label}: /health`, status === 200, `status ${status}`)
  const doc = (await fetch(`http://127.0.0.1:${port}/openapi.json`).then(
    async (r) => {
      const text = await r.text()
      try {
        return JSON.parse(text)
      } catch {
        return { openapi: `status ${r.status}: ${text.slice(0, 200)}` }
      }
    },
    (e) => ({ openapi: String(e) }),
  )) as { openapi?: string; paths?: object } | undefined
  check(`serve on ${label}: /openapi.json`, /^3\.1\./.test(doc?.openapi ?? '') && Object.keys(doc?.paths ?? {}).length > 0, doc?.openapi ?? JSON.stringify(doc).slice(0, 200))
  child.kill()
  await child.exited
  const log = await output
  if (process.env.SMOKE_DEBUG) console.log(log.split('\n').filter((l) => l.includes('"error"')).join('\n').slice(0, 3000))
  return log
}

const sqliteEnv = { ...baseEnv(dir), DB_DRIVER: 'sqlite', DB_PATH: join(dir, 'data/spaces.db') }
const doctor = run(['doctor'], sqliteEnv)
check('doctor (database and image encoding)', doctor.code === 0, doctor.out.trim().split('\n').join(' | '))
const sqliteLog = await serveOn('SQLite', sqliteEnv)
// The WAL checkpointer is a Worker, a separate entrypoint inside the executable (src/db/sqlite.ts).
check('SQLite checkpoints on a worker thread', sqliteLog.includes('sqlite_checkpointer_ready') && !sqliteLog.includes('sqlite_checkpointer_failed'))

if (await mysqlReachable()) {
  const database = await createTestDatabase(dir, 'mysql')
  await serveOn('MySQL', { ...baseEnv(dir), ...database.env })
  await database.drop()
} else {
  check('MySQL reachable for the MySQL smoke', process.env.REQUIRE_MYSQL !== '1', 'skipped: no MySQL server')
}

check('nothing but the binary and its data in the directory', readdirSync(dir).every((f) => ['spaces-api', 'data', 'media', 'storage'].includes(f)), readdirSync(dir).join(', '))
rmSync(dir, { recursive: true, force: true })
console.log(failures === 0 ? 'smoke: all checks passed' : `smoke: ${failures} check(s) failed`)
process.exit(failures === 0 ? 0 : 1)
