import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mysql from 'mysql2/promise'
import { createApp, createDeps } from '../src/app.ts'
import { loadConfig, type Config } from '../src/config.ts'
import { createDb } from '../src/db/index.ts'
import type { Db } from '../src/db/db.ts'
import type { Deps } from '../src/deps.ts'
import { migrate } from '../src/db/migrate.ts'
import { systemClock, type Clock } from '../src/lib/clock.ts'
import { configureLog } from '../src/lib/log.ts'
import type { Mailer } from '../src/lib/mailer.ts'

/** Which database the suite runs on: scripts/test.sh runs it once per dialect. */
export const TEST_DB: 'sqlite' | 'mysql' = process.env.TEST_DB === 'mysql' ? 'mysql' : 'sqlite'

export const mysqlServer = {
  host: process.env.TEST_MYSQL_HOST ?? '127.0.0.1',
  port: Number(process.env.TEST_MYSQL_PORT ?? 3306),
  user: process.env.TEST_MYSQL_USER ?? 'root',
  password: process.env.TEST_MYSQL_PASSWORD ?? '',
}

configureLog((process.env.TEST_LOG_LEVEL as 'debug' | undefined) ?? 'silent')

const random = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('base64url')

/** A complete, valid environment for a test app; `dir` holds its files. */
export function baseEnv(dir: string): Record<string, string> {
  return {
    NODE_ENV: 'test',
    PUBLIC_ORIGINS: 'https://site.test,http://localhost:4321',
    ADMIN_ORIGINS: 'https://admin.test',
    ASSET_BASE_URL: 'https://cdn.test/media',
    MEDIA_ROOT: join(dir, 'media'),
    STORAGE_ROOT: join(dir, 'storage'),
    JWT_ACCESS_SECRET: random(32),
    JWT_REFRESH_SECRET: random(32),
    ADMIN_PORTAL_URL: 'https://admin.test',
    IP_HASH_SALT: random(16),
  }
}

export interface TestDatabase {
  env: Record<string, string>
  drop(): Promise<void>
}

/** A new, empty database of the given dialect, dropped again by `drop()`. */
export async function createTestDatabase(dir: string, dialect = TEST_DB): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    return { env: { DB_DRIVER: 'sqlite', DB_PATH: join(dir, 'test.db') }, drop: async () => {} }
  }
  const name = `spaces_test_${process.pid}_${random(6).replace(/[^A-Za-z0-9]/g, '')}`
  const admin = await mysql.createConnection(mysqlServer)
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`)
  await admin.end()
  return {
    env: {
      DB_DRIVER: 'mysql',
      DB_HOST: mysqlServer.host,
      DB_PORT: String(mysqlServer.port),
      DB_USER: mysqlServer.user,
      DB_PASSWORD: mysqlServer.password,
      DB_NAME: name,
    },
    drop: () => dropDatabase(name),
  }
}

async function dropDatabase(name: string): Promise<void> {
  const conn = await mysql.createConnection(mysqlServer)
  await conn.query(`DROP DATABASE IF EXISTS \`${name}\``)
  await conn.end()
}

export interface TestApp {
  url: string
  config: Config
  db: Db
  deps: Deps
  dir: string
  fetch(path: string, init?: RequestInit): Promise<Response>
  /** Stops the server and closes the database, keeping the data (for a restart on the same DB). */
  stop(): Promise<void>
  /** Stops, then drops the database and removes the files. */
  destroy(): Promise<void>
}

export interface StartOptions {
  env?: Record<string, string | undefined>
  clock?: Clock
  mailer?: Mailer
  /** Reuse the files and database of an earlier app (a restart). */
  reuse?: { dir: string; env: Record<string, string> }
  migrate?: boolean
}

/** Starts the real app on a random loopback port over a fresh, migrated database. */
export async function startApp(options: StartOptions = {}): Promise<TestApp & { env: Record<string, string> }> {
  const dir = options.reuse?.dir ?? mkdtempSync(join(tmpdir(), 'spaces-test-'))
  // A restarted app owns the data from then on: its `destroy` drops the database the first one made.
  const database = options.reuse
    ? { env: {}, drop: async () => (options.reuse!.env.DB_DRIVER === 'mysql' ? dropDatabase(options.reuse!.env.DB_NAME!) : undefined) }
    : await createTestDatabase(dir)
  const env = { ...(options.reuse?.env ?? { ...baseEnv(dir), ...database.env }), ...options.env } as Record<string, string>
  const config = loadConfig(env)
  const db = createDb(config)
  if (options.migrate !== false) await migrate(db)
  const deps = createDeps(config, db, { clock: options.clock ?? systemClock, mailer: options.mailer })
  const app = createApp(deps)
  app.listen({ port: 0, hostname: '127.0.0.1' })
  const url = `http://127.0.0.1:${app.server!.port}`
  const stop = async () => {
    await app.stop(true)
    await deps.background.stop()
    await db.close()
  }
  return {
    url,
    config,
    db,
    deps,
    dir,
    env,
    fetch: (path, init) => fetch(url + path, init),
    stop,
    async destroy() {
      try {
        await stop()
      } finally {
        await database.drop()
        rmSync(dir, { recursive: true, force: true })
      }
    },
  }
}

/** Whether a MySQL server answers at `mysqlServer`. */
export async function mysqlReachable(): Promise<boolean> {
  try {
    const conn = await mysql.createConnection({ ...mysqlServer, connectTimeout: 2000 })
    await conn.end()
    return true
  } catch {
    return false
  }
}

/** A response body as JSON, loosely typed for assertions. */
// biome-ignore lint: tests assert on arbitrary shapes
export const json = (res: Response): Promise<any> => res.json()
