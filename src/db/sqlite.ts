import { Database, type SQLQueryBindings } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Sql } from 'sql-template-tag'
import { log } from '../lib/log.ts'
import type { Db, ExecResult, Row } from './db.ts'

export function createSqliteDb(path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const sqlite = new Database(path, { create: true, strict: true })
  sqlite.exec('PRAGMA journal_mode = WAL')
  sqlite.exec('PRAGMA synchronous = NORMAL')
  sqlite.exec('PRAGMA foreign_keys = ON')
  sqlite.exec('PRAGMA busy_timeout = 5000')
  const checkpointer = path === ':memory:' ? undefined : startCheckpointer(sqlite, path)

  // One connection serves the process. A transaction holds it across awaits, so every other
  // statement waits for the transaction to end instead of silently joining it.
  let queue: Promise<unknown> = Promise.resolve()
  let inTransaction = false
  const exclusive = <T>(fn: () => Promise<T> | T): Promise<T> => {
    const run = queue.then(fn)
    queue = run.catch(() => {})
    return run
  }
  const guarded = <T>(fn: () => T): Promise<T> =>
    inTransaction ? exclusive(fn) : new Promise<T>((ok) => ok(fn()))

  const run = {
    query<T>(q: Sql): T[] {
      return sqlite.query(q.sql).all(...bind(q.values)) as T[]
    },
    execute(q: Sql): ExecResult {
      const result = sqlite.query(q.sql).run(...bind(q.values))
      return { affectedRows: result.changes, insertId: Number(result.lastInsertRowid) }
    },
  }

  const handle = (direct: boolean): Db => {
    const wrapAccess = <T>(fn: () => T) => (direct ? Promise.resolve().then(fn) : guarded(fn))
    const db: Db = {
      dialect: 'sqlite',
      query: <T = Row>(q: Sql) => wrapAccess(() => run.query<T>(q)),
      one: <T = Row>(q: Sql) => wrapAccess(() => run.query<T>(q)[0]),
      execute: (q: Sql) => wrapAccess(() => run.execute(q)),
      transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
        if (direct) return fn(db)
        return exclusive(async () => {
          inTransaction = true
          sqlite.exec('BEGIN IMMEDIATE')
          try {
            const result = await fn(handle(true))
            sqlite.exec('COMMIT')
            return result
          } catch (error) {
            if (sqlite.inTransaction) sqlite.exec('ROLLBACK')
            throw error
          } finally {
            inTransaction = false
          }
        })
      },
      script: (statements: string) => wrapAccess(() => sqlite.exec(statements)).then(() => {}),
      ping: () => wrapAccess(() => void sqlite.query('SELECT 1').get()),
      async close() {
        if (!direct) {
          await queue
          checkpointer?.terminate()
          sqlite.close()
        }
      },
    }
    return db
  }
  return handle(false)
}

/**
 * A checkpoint run by the connection that commits blocks the event loop for as long as it copies
 * the WAL back and syncs (measured: 100-500 ms stalls under a burst of enquiries, bench/enquiries.ts).
 * So this connection never checkpoints; a worker thread with its own connection does, every 200 ms.
 * Should the worker fail, SQLite's own automatic checkpoint comes back on.
 */
function startCheckpointer(sqlite: Database, path: string): Worker | undefined {
  try {
    // In the executable the bundle's modules all share one import.meta.url at the root of the
    // embedded file system, where the worker entrypoint sits under db/ (scripts/build.ts).
    const compiled = import.meta.url.includes('$bunfs')
    const worker = new Worker(compiled ? './db/sqlite-checkpointer.ts' : new URL('./sqlite-checkpointer.ts', import.meta.url).href)
    sqlite.exec('PRAGMA wal_autocheckpoint = 0')
    worker.addEventListener('error', (event) => {
      log.warn({ event: 'sqlite_checkpointer_failed', error: event.message }, 'WAL checkpoints back on the main connection')
      sqlite.exec('PRAGMA wal_autocheckpoint = 1000')
      worker.terminate()
    })
    worker.addEventListener('message', () => log.debug({ event: 'sqlite_checkpointer_ready' }, 'WAL checkpoints run on a worker thread'))
    worker.postMessage({ path })
    worker.unref()
    return worker
  } catch {
    return undefined
  }
}

function bind(values: readonly unknown[]): SQLQueryBindings[] {
  return values.map((v) => {
    if (v instanceof Date) return v.toISOString()
    if (typeof v === 'boolean') return v ? 1 : 0
    if (v === undefined) return null
    return v as SQLQueryBindings
  })
}
