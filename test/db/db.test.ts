import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sql from 'sql-template-tag'
import { loadConfig } from '../../src/config.ts'
import { toDate, type Db } from '../../src/db/db.ts'
import { createDb } from '../../src/db/index.ts'
import { migrate, MigrationError } from '../../src/db/migrate.ts'
import { migrations } from '../../src/db/migrations.ts'
import { baseEnv, createTestDatabase, TEST_DB, type TestDatabase } from '../harness.ts'

let dir: string
let database: TestDatabase
let db: Db

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'spaces-db-'))
  database = await createTestDatabase(dir)
  db = createDb(loadConfig({ ...baseEnv(dir), ...database.env }))
  await migrate(db)
})
afterAll(async () => {
  await db.close()
  await database.drop()
  rmSync(dir, { recursive: true, force: true })
})

const insertCategory = (handle: Db, slug: string) =>
  handle.execute(sql`INSERT INTO media_categories (slug, label, position) VALUES (${slug}, ${'Label'}, ${9})`)

describe(`data layer on ${TEST_DB}`, () => {
  test('the migrations seed the five initial categories', async () => {
    const rows = await db.query<{ slug: string }>(sql`SELECT slug FROM media_categories ORDER BY position`)
    expect(rows.map((r) => r.slug)).toEqual(['office', 'function-hall', 'sharing-corner', 'event-space', 'meeting-room'])
  })

  test('running the migrations again applies nothing', async () => {
    expect((await migrate(db)).applied).toEqual([])
  })

  test('a landed migration whose text changed stops the run', async () => {
    const edited = migrations[db.dialect].map((m) => ({ ...m, sql: `${m.sql}\n-- edited` }))
    await expect(migrate(db, edited)).rejects.toBeInstanceOf(MigrationError)
  })

  test('a timestamp written as a Date reads back as the same instant', async () => {
    const at = new Date('2026-03-04T05:06:07.089Z')
    await db.execute(sql`INSERT INTO admin_users (id, name, phone, role, status, created_at, updated_at)
                         VALUES (${'01TIMESTAMPTEST00000000000'}, ${'T'}, ${'+10000000001'}, ${'admin'}, ${'active'}, ${at}, ${at})`)
    const row = await db.one<{ created_at: unknown }>(sql`SELECT created_at FROM admin_users WHERE id = ${'01TIMESTAMPTEST00000000000'}`)
    expect(toDate(row!.created_at).toISOString()).toBe(at.toISOString())
    const later = await db.query(sql`SELECT id FROM admin_users WHERE created_at > ${new Date('2026-03-04T05:06:07.088Z')}`)
    expect(later).toHaveLength(1)
  })

  test('booleans are written and read as 1 and 0', async () => {
    const row = await db.one<{ yes: number; no: number }>(sql`SELECT ${true} AS yes, ${false} AS no`)
    expect(Number(row!.yes)).toBe(1)
    expect(Number(row!.no)).toBe(0)
  })

  test('execute reports matched rows and the insert id', async () => {
    const inserted = await insertCategory(db, 'exec-test')
    expect(inserted.insertId).toBeGreaterThan(5)
    // Updating to the same value still counts the matched row in both dialects.
    const same = await db.execute(sql`UPDATE media_categories SET label = ${'Label'} WHERE slug = ${'exec-test'}`)
    expect(same.affectedRows).toBe(1)
    const none = await db.execute(sql`UPDATE media_categories SET label = ${'x'} WHERE slug = ${'missing'}`)
    expect(none.affectedRows).toBe(0)
  })

  test('a transaction that throws leaves nothing behind', async () => {
    await expect(
      db.transaction(async (tx) => {
        await insertCategory(tx, 'rolled-back')
        throw new Error('stop')
      }),
    ).rejects.toThrow('stop')
    expect(await db.one(sql`SELECT id FROM media_categories WHERE slug = ${'rolled-back'}`)).toBeUndefined()
  })

  test('a committed transaction keeps all its writes', async () => {
    await db.transaction(async (tx) => {
      await insertCategory(tx, 'committed-a')
      await insertCategory(tx, 'committed-b')
    })
    const rows = await db.query(sql`SELECT id FROM media_categories WHERE slug IN (${'committed-a'}, ${'committed-b'})`)
    expect(rows).toHaveLength(2)
  })

  test('a statement outside a running transaction does not join it', async () => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const tx = db.transaction(async (t) => {
      await insertCategory(t, 'inside-tx')
      await gate
      throw new Error('roll back')
    })
    await Bun.sleep(20)
    const outside = insertCategory(db, 'outside-tx')
    release()
    await expect(tx).rejects.toThrow('roll back')
    await outside
    const slugs = (await db.query<{ slug: string }>(sql`SELECT slug FROM media_categories WHERE slug IN (${'inside-tx'}, ${'outside-tx'})`)).map((r) => r.slug)
    expect(slugs).toEqual(['outside-tx'])
  })

  test('a unique index rejects a duplicate', async () => {
    await expect(insertCategory(db, 'office')).rejects.toThrow()
  })

  test('foreign keys are enforced', async () => {
    const now = new Date()
    await expect(
      db.execute(sql`INSERT INTO refresh_tokens (id, user_id, family_id, token_hash, expires_at, created_at)
                     VALUES (${'01FKTEST000000000000000000'}, ${'01NOSUCHUSER00000000000000'}, ${'f'}, ${'h'.repeat(64)}, ${now}, ${now})`),
    ).rejects.toThrow()
  })

  test('ping answers', async () => {
    await db.ping()
  })
})

describe('migration files', () => {
  test('the embedded list names every file under sql/, in order, for both dialects', () => {
    for (const dialect of ['mysql', 'sqlite'] as const) {
      const files = readdirSync(join(import.meta.dir, '../../sql', dialect))
        .filter((f) => f.endsWith('.sql'))
        .sort()
      expect(migrations[dialect].map((m) => `${m.name}.sql`)).toEqual(files)
      expect(migrations[dialect].map((m) => m.version)).toEqual(files.map((_, i) => i + 1))
    }
  })
})
