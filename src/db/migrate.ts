import sql from 'sql-template-tag'
import type { Db } from './db.ts'
import { migrations as registry, type Migration } from './migrations.ts'

const LOCK = 'spaces_api_migrate'

export interface MigrateResult {
  applied: string[]
  current: number
}

export class MigrationError extends Error {}

/**
 * Applies pending migrations in order, each with its record in one transaction. MySQL cannot roll
 * DDL back, so its files are written to be re-runnable and a migration is recorded only after all of
 * its statements ran; there everything runs on one pinned connection holding a named lock, so two
 * processes never migrate at once. A landed migration whose text changed stops the run: files are
 * forward-only.
 */
export async function migrate(db: Db, list: Migration[] = registry[db.dialect]): Promise<MigrateResult> {
  if (db.dialect === 'sqlite') return applyPending(db, list)
  return db.transaction(async (conn) => {
    const lock = await conn.one<{ ok: number | null }>(sql`SELECT GET_LOCK(${LOCK}, 60) AS ok`)
    if (Number(lock?.ok) !== 1) throw new MigrationError('another process held the migration lock for 60 s')
    try {
      return await applyPending(conn, list)
    } finally {
      await conn.query(sql`SELECT RELEASE_LOCK(${LOCK})`)
    }
  })
}

async function applyPending(db: Db, list: Migration[]): Promise<MigrateResult> {
  await db.script(
    db.dialect === 'mysql'
      ? `CREATE TABLE IF NOT EXISTS schema_migrations (
           version INT UNSIGNED NOT NULL PRIMARY KEY,
           name VARCHAR(255) NOT NULL,
           checksum CHAR(64) NOT NULL,
           applied_at DATETIME(3) NOT NULL
         ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4`
      : `CREATE TABLE IF NOT EXISTS schema_migrations (
           version INTEGER NOT NULL PRIMARY KEY,
           name TEXT NOT NULL,
           checksum TEXT NOT NULL,
           applied_at TEXT NOT NULL
         )`,
  )
  const rows = await db.query<{ version: number; checksum: string }>(sql`SELECT version, checksum FROM schema_migrations`)
  const done = new Map(rows.map((r) => [Number(r.version), r.checksum]))
  const applied: string[] = []
  for (const migration of list) {
    const checksum = new Bun.CryptoHasher('sha256').update(migration.sql).digest('hex')
    const recorded = done.get(migration.version)
    if (recorded !== undefined) {
      if (recorded !== checksum) {
        throw new MigrationError(`migration ${migration.name} was changed after it was applied; add a new one instead`)
      }
      continue
    }
    await db.transaction(async (tx) => {
      await tx.script(migration.sql)
      await tx.execute(sql`INSERT INTO schema_migrations (version, name, checksum, applied_at)
                           VALUES (${migration.version}, ${migration.name}, ${checksum}, ${new Date()})`)
    })
    applied.push(migration.name)
  }
  return { applied, current: Math.max(0, ...list.map((m) => m.version)) }
}
