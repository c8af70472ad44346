import type { Sql } from 'sql-template-tag'

export type Dialect = 'mysql' | 'sqlite'
export type Row = Record<string, unknown>

export interface ExecResult {
  /** Rows matched by the statement (MySQL is connected with FOUND_ROWS, so both dialects agree). */
  affectedRows: number
  /** The AUTO_INCREMENT / rowid of an insert; 0 when there is none. */
  insertId: number
}

/**
 * The whole data-access surface. Queries are `sql` template literals (sql-template-tag), whose `?`
 * placeholders both drivers understand. Timestamps go in as `Date` and come out as `Date` (MySQL) or
 * an ISO string (SQLite): read them with `toDate`. Booleans go in as booleans and come out as 0/1.
 */
export interface Db {
  readonly dialect: Dialect
  query<T = Row>(q: Sql): Promise<T[]>
  one<T = Row>(q: Sql): Promise<T | undefined>
  execute(q: Sql): Promise<ExecResult>
  /** Runs `fn` in one transaction; a throw rolls it back. Inside, `tx` is the only handle to use. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>
  /** Runs a script of `;`-separated statements (migrations); not for user input. */
  script(statements: string): Promise<void>
  ping(): Promise<void>
  close(): Promise<void>
}

export function toDate(value: unknown): Date {
  if (value instanceof Date) return value
  if (typeof value === 'string' || typeof value === 'number') return new Date(value)
  throw new TypeError(`not a timestamp: ${String(value)}`)
}

export function toDateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : toDate(value)
}

export function toIso(value: unknown): string {
  return toDate(value).toISOString()
}

export function toIsoOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : toIso(value)
}

/** Splits a migration script into statements: on `;` at the end of a line, outside comments. */
export function splitStatements(script: string): string[] {
  return script
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n')
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter(Boolean)
}

/**
 * A `%q%` pattern for `LIKE … ESCAPE '!'` that matches `q` literally. `!` rather than a backslash,
 * because MySQL and SQLite read a backslash in a string literal differently.
 */
export function containsPattern(q: string): string {
  return `%${q.replace(/[!%_]/g, (c) => `!${c}`)}%`
}
