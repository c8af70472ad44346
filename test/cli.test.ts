/**
 * The command line of operations.md, run as a real process: `bun src/main.ts <cmd>`.
 * Each run gets a controlled environment and an empty working directory, so no `.env` is loaded.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import pkg from '../package.json' with { type: 'json' }
import { baseEnv } from './harness.ts'

const MAIN = resolve(import.meta.dir, '../src/main.ts')
const COMMANDS = ['serve', 'migrate', 'seed', 'gc', 'reprocess', 'doctor']

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'spaces-cli-'))
  dirs.push(dir)
  return dir
}

/** Only what a process needs to run, plus `extra`. */
function baseProcessEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? tmpdir(), ...extra }
}

/** A complete valid environment on an SQLite file inside `dir`. */
function validEnv(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...baseEnv(dir), DB_DRIVER: 'sqlite', DB_PATH: join(dir, 'spaces.db'), LOG_LEVEL: 'warn', ...extra }
}

function run(args: string[], env: Record<string, string> = {}, cwd = tempDir()) {
  const res = Bun.spawnSync([process.execPath, MAIN, ...args], {
    cwd,
    env: baseProcessEnv(env),
    stdout: 'pipe',
    stderr: 'pipe',
    timeout: 60_000,
  })
  return { code: res.exitCode, stdout: res.stdout.toString(), stderr: res.stderr.toString() }
}

async function freePort(): Promise<number> {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = server.port!
  await server.stop(true)
  return port
}

describe('help and version', () => {
  test('--help exits 0 and lists every command, with no configuration at all', () => {
    // The environment here has nothing but PATH and HOME.
    const { code, stdout } = run(['--help'])
    expect(code).toBe(0)
    for (const command of COMMANDS) expect(stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'))
    expect(stdout).toContain('--dry-run')
    expect(stdout).toContain('--gc')
  })

  test('-h is the same as --help', () => {
    const long = run(['--help'])
    const short = run(['-h'])
    expect(short.code).toBe(0)
    expect(short.stdout).toBe(long.stdout)
  })

  test('--version prints the package.json version and the GIT_SHA from the environment', () => {
    const { code, stdout } = run(['--version'], { GIT_SHA: 'abc1234' })
    expect(code).toBe(0)
    expect(stdout).toContain(pkg.version)
    expect(stdout).toContain('abc1234')
  })

  test('-v without GIT_SHA prints the version and the build identifier of a source run', () => {
    const { code, stdout } = run(['-v'])
    expect(code).toBe(0)
    expect(stdout.trim()).toBe(`spaces-api ${pkg.version} (dev)`)
  })
})

describe('refusals', () => {
  test('an unknown command exits 1 with the usage on stderr', () => {
    const { code, stdout, stderr } = run(['frobnicate'], validEnv(tempDir()))
    expect(code).toBe(1)
    expect(stderr).toContain('unknown command "frobnicate"')
    expect(stderr).toContain('Usage:')
    expect(stdout).toBe('')
  })

  test('an unknown option exits 1 and names the option', () => {
    const dir = tempDir()
    const { code, stderr } = run(['migrate', '--bogus'], validEnv(dir))
    expect(code).toBe(1)
    expect(stderr).toContain('"--bogus"')
    expect(existsSync(join(dir, 'spaces.db'))).toBe(false)
  })

  test('an option of another command is unknown', () => {
    const { code, stderr } = run(['gc', '--gc'], validEnv(tempDir()))
    expect(code).toBe(1)
    expect(stderr).toContain('"--gc"')
  })

  test('an invalid configuration exits 1 with one line per problem and runs nothing', () => {
    const dir = tempDir()
    const env = validEnv(dir, { PORT: '70000', LOG_LEVEL: 'loud', PUBLIC_ORIGINS: '*', JWT_ACCESS_SECRET: 'too-short' })
    delete (env as Record<string, string | undefined>).IP_HASH_SALT
    const { code, stdout, stderr } = run(['migrate'], env)
    expect(code).toBe(1)
    expect(stdout).toBe('')
    const lines = stderr.trimEnd().split('\n')
    expect(lines[0]).toContain('invalid configuration (5 problems)')
    const problems = lines.slice(1).map((line) => line.trim())
    expect(problems).toHaveLength(5)
    const names = problems.map((line) => line.slice(0, line.indexOf(':')))
    expect(names.sort()).toEqual(['IP_HASH_SALT', 'JWT_ACCESS_SECRET', 'LOG_LEVEL', 'PORT', 'PUBLIC_ORIGINS'])
    expect(stderr).not.toContain('too-short')
    // migrate did not run: no database file was created.
    expect(existsSync(join(dir, 'spaces.db'))).toBe(false)
  })

  test('every command refuses an invalid configuration', () => {
    for (const command of COMMANDS) {
      const { code, stderr } = run([command], { DB_DRIVER: 'sqlite' })
      expect(code).toBe(1)
      expect(stderr).toContain('invalid configuration')
      expect(stderr).toMatch(/^\s+PUBLIC_ORIGINS: is required/m)
    }
  })
})

describe('migrate', () => {
  test('applies the migrations once, then says the schema is up to date', () => {
    const dir = tempDir()
    const env = validEnv(dir)
    const first = run(['migrate'], env)
    expect(first.stderr).toBe('')
    expect(first.code).toBe(0)
    expect(first.stdout).toStartWith('applied ')
    expect(existsSync(join(dir, 'spaces.db'))).toBe(true)

    const second = run(['migrate'], env)
    expect(second.code).toBe(0)
    expect(second.stdout).toContain('up to date')
  })
})

describe('serve', () => {
  test('without PORT exits 1 and says PORT is required', () => {
    const { code, stderr } = run(['serve'], validEnv(tempDir()))
    expect(code).toBe(1)
    expect(stderr).toContain('PORT is required')
  })

  test('is the default command', () => {
    const { code, stderr } = run([], validEnv(tempDir()))
    expect(code).toBe(1)
    expect(stderr).toContain('serve: PORT is required')
  })

  test('with a valid sqlite environment serves GET /health with 200', async () => {
    const dir = tempDir()
    const port = await freePort()
    const child = Bun.spawn([process.execPath, MAIN, 'serve'], {
      cwd: dir,
      env: baseProcessEnv(validEnv(dir, { PORT: String(port), GIT_SHA: 'cli-test' })),
      stdout: 'pipe',
      stderr: 'pipe',
    })
    try {
      let response: Response | undefined
      const deadline = Date.now() + 20_000
      while (Date.now() < deadline && child.exitCode === null) {
        try {
          response = await fetch(`http://127.0.0.1:${port}/health`)
          break
        } catch {
          await Bun.sleep(100)
        }
      }
      if (!response) {
        child.kill()
        await child.exited
        throw new Error(`serve did not come up (exit ${child.exitCode}): ${await new Response(child.stderr).text()}`)
      }
      expect(response.status).toBe(200)
      expect(await response.json()).toMatchObject({ status: 'ok', db: { status: 'ok' }, sha: 'cli-test' })
      // serve applied the migrations before listening, and keeps running after answering.
      expect(existsSync(join(dir, 'spaces.db'))).toBe(true)
      expect(child.exitCode).toBeNull()
    } finally {
      if (child.exitCode === null) child.kill()
      await child.exited
    }
    // SIGTERM is a graceful stop (test/shutdown.test.ts): the process exits 0 by itself.
    expect(child.exitCode).toBe(0)
  })
})

describe('doctor', () => {
  test('with a valid sqlite environment exits 0 and reports config, database and images ok', () => {
    const { code, stdout, stderr } = run(['doctor'], validEnv(tempDir()))
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toMatch(/^ok {4}config: /m)
    expect(stdout).toMatch(/^ok {4}database: /m)
    expect(stdout).toMatch(/^ok {4}images: .*avif \d+ B, webp \d+ B, jpeg \d+ B$/m)
    expect(stdout).not.toContain('FAIL')
  })
})
