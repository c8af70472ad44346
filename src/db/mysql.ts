import mysql, { type Pool, type PoolConnection, type ResultSetHeader } from 'mysql2/promise'
import type { Sql } from 'sql-template-tag'
import type { Db, ExecResult, Row } from './db.ts'
import { splitStatements } from './db.ts'

export interface MysqlOptions {
  host: string
  port: number
  user: string
  password: string
  database: string
  poolMax: number
  connectTimeoutMs?: number
}

export function createMysqlDb(options: MysqlOptions): Db {
  const pool = mysql.createPool({
    host: options.host,
    port: options.port,
    user: options.user,
    password: options.password,
    database: options.database,
    connectionLimit: options.poolMax,
    maxIdle: options.poolMax,
    charset: 'utf8mb4_unicode_ci',
    // DATETIME columns hold UTC; mysql2 reads and writes them as UTC Dates.
    timezone: 'Z',
    connectTimeout: options.connectTimeoutMs ?? 5000,
    enableKeepAlive: true,
    supportBigNumbers: true,
    decimalNumbers: true,
  })
  // NOW() and friends in UTC too, for any ad-hoc SQL run through this pool.
  pool.pool.on('connection', (conn) => {
    conn.query("SET time_zone = '+00:00'")
  })
  return wrap(pool, pool)
}

type Runner = Pick<Pool, 'query'> | Pick<PoolConnection, 'query'>

function wrap(runner: Runner, pool: Pool, inTransaction = false): Db {
  const query = async <T = Row>(q: Sql): Promise<T[]> => {
    const [rows] = await runner.query(q.sql, q.values)
    return rows as T[]
  }
  const db: Db = {
    dialect: 'mysql',
    query,
    async one<T = Row>(q: Sql) {
      return (await query<T>(q))[0]
    },
    async execute(q: Sql): Promise<ExecResult> {
      const [result] = await runner.query<ResultSetHeader>(q.sql, q.values)
      return { affectedRows: result.affectedRows, insertId: Number(result.insertId ?? 0) }
    },
    async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      if (inTransaction) return fn(db)
      const conn = await pool.getConnection()
      try {
        await conn.beginTransaction()
        const result = await fn(wrap(conn, pool, true))
        await conn.commit()
        return result
      } catch (error) {
        await conn.rollback().catch(() => {})
        throw error
      } finally {
        conn.release()
      }
    },
    async script(statements: string) {
      for (const statement of splitStatements(statements)) await runner.query(statement)
    },
    async ping() {
      await runner.query('SELECT 1')
    },
    async close() {
      if (!inTransaction) await pool.end()
    },
  }
  return db
}
