import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sql from 'sql-template-tag'
import { loadConfig } from '../../src/config.ts'
import type { Db } from '../../src/db/db.ts'
import { createDb } from '../../src/db/index.ts'
import { migrate } from '../../src/db/migrate.ts'
import { baseEnv, createTestDatabase, type TestDatabase } from '../harness.ts'

// Runs in the MySQL pass of scripts/test.sh: it needs both databases at once.
let dir: string
const dbs: { database: TestDatabase; db: Db }[] = []

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'spaces-parity-'))
  for (const dialect of ['mysql', 'sqlite'] as const) {
    const database = await createTestDatabase(dir, dialect)
    const db = createDb(loadConfig({ ...baseEnv(dir), ...database.env }))
    await migrate(db)
    dbs.push({ database, db })
  }
})
afterAll(async () => {
  for (const { db, database } of dbs) {
    await db.close()
    await database.drop()
  }
  rmSync(dir, { recursive: true, force: true })
})

interface Shape {
  tables: string[]
  columns: Record<string, string[]>
  primaryKeys: Record<string, string[]>
  indexes: Record<string, string>
}

async function describeMysql(db: Db): Promise<Shape> {
  const columns = await db.query<{ t: string; c: string; nullable: string; key: string }>(sql`
    SELECT TABLE_NAME AS t, COLUMN_NAME AS c, IS_NULLABLE AS nullable, COLUMN_KEY AS \`key\`
    FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION`)
  const stats = await db.query<{ t: string; i: string; nonUnique: number; c: string }>(sql`
    SELECT TABLE_NAME AS t, INDEX_NAME AS i, NON_UNIQUE AS nonUnique, COLUMN_NAME AS c
    FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`)
  const shape: Shape = { tables: [], columns: {}, primaryKeys: {}, indexes: {} }
  for (const col of columns) {
    ;(shape.columns[col.t] ??= []).push(`${col.c}${col.nullable === 'YES' ? ' null' : ''}`)
  }
  const grouped: Record<string, { t: string; unique: boolean; cols: string[] }> = {}
  for (const s of stats) {
    const entry = (grouped[`${s.t}.${s.i}`] ??= { t: s.t, unique: Number(s.nonUnique) === 0, cols: [] })
    entry.cols.push(s.c)
  }
  for (const [key, { t, unique, cols }] of Object.entries(grouped)) {
    if (key.endsWith('.PRIMARY')) shape.primaryKeys[t] = cols
    else shape.indexes[key] = `${unique ? 'unique ' : ''}(${cols.join(', ')})`
  }
  shape.tables = Object.keys(shape.columns).sort()
  return shape
}

async function describeSqlite(db: Db): Promise<Shape> {
  const tables = (
    await db.query<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
  ).map((r) => r.name)
  const shape: Shape = { tables, columns: {}, primaryKeys: {}, indexes: {} }
  for (const t of tables) {
    const cols = await db.query<{ name: string; notnull: number; pk: number }>(sql`SELECT name, "notnull", pk FROM pragma_table_info(${t}) ORDER BY cid`)
    shape.columns[t] = cols.map((c) => `${c.name}${c.notnull || c.pk ? '' : ' null'}`)
    shape.primaryKeys[t] = cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name)
    const indexes = await db.query<{ name: string; unique: number; origin: string }>(sql`SELECT name, "unique", origin FROM pragma_index_list(${t})`)
    for (const index of indexes) {
      if (index.origin === 'pk') continue
      const icols = await db.query<{ name: string }>(sql`SELECT name FROM pragma_index_info(${index.name}) ORDER BY seqno`)
      shape.indexes[`${t}.${index.name}`] = `${index.unique ? 'unique ' : ''}(${icols.map((c) => c.name).join(', ')})`
    }
  }
  return shape
}

test('MySQL and SQLite migrations yield the same tables, columns, primary keys and indexes', async () => {
  const [mysqlShape, sqliteShape] = [await describeMysql(dbs[0]!.db), await describeSqlite(dbs[1]!.db)]
  expect(mysqlShape.tables.length).toBeGreaterThan(8)
  expect(sqliteShape.tables).toEqual(mysqlShape.tables)
  expect(sqliteShape.columns).toEqual(mysqlShape.columns)
  expect(sqliteShape.primaryKeys).toEqual(mysqlShape.primaryKeys)
  expect(sqliteShape.indexes).toEqual(mysqlShape.indexes)
})
