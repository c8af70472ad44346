/**
 * `spaces-api seed` run as a real process (`bun src/main.ts seed`) in an empty working directory,
 * so no `.env` is read, on an SQLite file that the test then opens itself.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { login } from './factories.ts'
import { baseEnv, json, startApp } from './harness.ts'

const MAIN = resolve(import.meta.dir, '../src/main.ts')
const SEED = {
  SEED_SUPERADMIN_NAME: 'First Super',
  SEED_SUPERADMIN_PHONE: '+44 161 496 0500',
  SEED_SUPERADMIN_EMAIL: 'first.super@example.test',
  SEED_SUPERADMIN_PASSWORD: 'amber lanterns over quiet water',
}
const PHONE = '+441614960500'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'spaces-seed-'))
  dirs.push(dir)
  return dir
}

/** A complete valid environment on `<dir>/db.sqlite`, plus `extra`. */
function envFor(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...baseEnv(dir), DB_DRIVER: 'sqlite', DB_PATH: join(dir, 'db.sqlite'), ...extra }
}

function seed(dir: string, env: Record<string, string>) {
  const res = Bun.spawnSync([process.execPath, MAIN, 'seed'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? tmpdir(), ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    timeout: 60_000,
  })
  const stdout = res.stdout.toString()
  const stderr = res.stderr.toString()
  return { code: res.exitCode, stdout, stderr, output: stdout + stderr }
}

interface Row {
  id: string
  name: string
  phone: string
  email: string | null
  role: string
  status: string
  password_hash: string | null
  created_by: string | null
}

/** Every admin row of the SQLite file (none when the file does not exist yet). */
function rows(dir: string): Row[] {
  const path = join(dir, 'db.sqlite')
  if (!existsSync(path)) return []
  const db = new Database(path, { readonly: true })
  try {
    const table = db.query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'admin_users'`).get()
    if (!table) return []
    return db.query('SELECT id, name, phone, email, role, status, password_hash, created_by FROM admin_users').all() as Row[]
  } finally {
    db.close()
  }
}

describe('seeding the first superadmin', () => {
  let dir: string
  let env: Record<string, string>
  let first: ReturnType<typeof seed>

  beforeAll(() => {
    dir = tempDir()
    env = envFor(dir, SEED)
    first = seed(dir, env)
  })

  test('the first run exits 0 and says the superadmin was created', () => {
    expect(first.code).toBe(0)
    expect(first.stdout).toContain('created')
    expect(first.stdout).toContain(PHONE)
  })

  test('the row is an active superadmin with the E.164 phone and an argon2id hash', () => {
    const [row, ...others] = rows(dir)
    expect(others).toEqual([])
    expect(row).toMatchObject({
      name: 'First Super',
      phone: PHONE,
      email: 'first.super@example.test',
      role: 'superadmin',
      status: 'active',
      created_by: null,
    })
    expect(row!.password_hash).toStartWith('$argon2id$')
  })

  test('the password appears in neither stdout nor stderr', () => {
    expect(first.output).not.toContain(SEED.SEED_SUPERADMIN_PASSWORD)
  })

  test('a second run exits 0, says a superadmin exists and creates nothing', () => {
    const before = rows(dir)
    const again = seed(dir, env)
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('exists')
    expect(again.output).not.toContain(SEED.SEED_SUPERADMIN_PASSWORD)
    expect(rows(dir)).toEqual(before)
  })

  test('a second run with other SEED_* values still creates nothing', () => {
    const again = seed(dir, { ...env, SEED_SUPERADMIN_PHONE: '+44 161 496 0501', SEED_SUPERADMIN_NAME: 'Second' })
    expect(again.code).toBe(0)
    expect(rows(dir)).toHaveLength(1)
  })

  test('the seeded superadmin can log in over HTTP and manage users', async () => {
    const app = await startApp({ reuse: { dir, env } })
    try {
      const session = await login(app, PHONE, SEED.SEED_SUPERADMIN_PASSWORD)
      const res = await app.fetch('/admin/users', { headers: { authorization: `Bearer ${session.accessToken}` } })
      expect(res.status).toBe(200)
      const { data } = await json(res)
      expect(data).toEqual([expect.objectContaining({ phone: PHONE, role: 'superadmin', hasPassword: true, createdBy: null })])
    } finally {
      await app.stop()
    }
  })
})

describe('seeding with bad SEED_* values', () => {
  test('missing SEED_* variables exit 1, list each one and create nothing', () => {
    const dir = tempDir()
    const { code, stderr } = seed(dir, envFor(dir))
    expect(code).toBe(1)
    expect(stderr).toContain('SEED_SUPERADMIN_NAME')
    expect(stderr).toContain('SEED_SUPERADMIN_PHONE')
    expect(stderr).toContain('SEED_SUPERADMIN_PASSWORD')
    expect(rows(dir)).toEqual([])
  })

  test('only the missing variables are listed', () => {
    const dir = tempDir()
    const { code, stderr } = seed(dir, envFor(dir, { SEED_SUPERADMIN_NAME: SEED.SEED_SUPERADMIN_NAME, SEED_SUPERADMIN_PHONE: SEED.SEED_SUPERADMIN_PHONE }))
    expect(code).toBe(1)
    expect(stderr).toContain('SEED_SUPERADMIN_PASSWORD')
    expect(stderr).not.toContain('SEED_SUPERADMIN_NAME')
    expect(stderr).not.toContain('SEED_SUPERADMIN_PHONE')
  })

  test('a too short password exits 1, says why, and neither prints it nor creates anyone', () => {
    const dir = tempDir()
    const { code, stderr, output } = seed(dir, envFor(dir, { ...SEED, SEED_SUPERADMIN_PASSWORD: 'Short#Pass1' }))
    expect(code).toBe(1)
    expect(stderr).toContain('SEED_SUPERADMIN_PASSWORD')
    expect(output).not.toContain('Short#Pass1')
    expect(rows(dir)).toEqual([])
  })

  test('a common password exits 1', () => {
    const dir = tempDir()
    const { code, stderr } = seed(dir, envFor(dir, { ...SEED, SEED_SUPERADMIN_PASSWORD: 'passwordpassword' }))
    expect(code).toBe(1)
    expect(stderr).toContain('SEED_SUPERADMIN_PASSWORD')
    expect(rows(dir)).toEqual([])
  })

  test('a password holding the phone digits exits 1', () => {
    const dir = tempDir()
    const { code, stderr } = seed(dir, envFor(dir, { ...SEED, SEED_SUPERADMIN_PASSWORD: 'ring me at 1614960500 ok' }))
    expect(code).toBe(1)
    expect(stderr).toContain('SEED_SUPERADMIN_PASSWORD')
  })

  test('an invalid phone number exits 1 and creates nothing', () => {
    const dir = tempDir()
    const { code, stderr } = seed(dir, envFor(dir, { ...SEED, SEED_SUPERADMIN_PHONE: '12345' }))
    expect(code).toBe(1)
    expect(stderr).toContain('SEED_SUPERADMIN_PHONE')
    expect(rows(dir)).toEqual([])
  })

  test('a national phone number is read in PHONE_DEFAULT_COUNTRY', () => {
    const dir = tempDir()
    const { code } = seed(dir, envFor(dir, { ...SEED, SEED_SUPERADMIN_PHONE: '0161 496 0500', PHONE_DEFAULT_COUNTRY: 'GB' }))
    expect(code).toBe(0)
    expect(rows(dir)[0]?.phone).toBe(PHONE)
  })

  test('an invalid e-mail exits 1', () => {
    const dir = tempDir()
    const { code, stderr } = seed(dir, envFor(dir, { ...SEED, SEED_SUPERADMIN_EMAIL: 'not-an-email' }))
    expect(code).toBe(1)
    expect(stderr).toContain('SEED_SUPERADMIN_EMAIL')
  })
})
