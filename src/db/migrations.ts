import type { Dialect } from './db.ts'
// Imported as text so that `bun build --compile` embeds them in the executable.
// A test checks that this list and the files under sql/ agree.
import mysql0001 from '../../sql/mysql/0001_init.sql' with { type: 'text' }
import sqlite0001 from '../../sql/sqlite/0001_init.sql' with { type: 'text' }
import mysql0002 from '../../sql/mysql/0002_inbox_order.sql' with { type: 'text' }
import sqlite0002 from '../../sql/sqlite/0002_inbox_order.sql' with { type: 'text' }

export interface Migration {
  version: number
  name: string
  sql: string
}

export const migrations: Record<Dialect, Migration[]> = {
  mysql: [
    { version: 1, name: '0001_init', sql: mysql0001 },
    { version: 2, name: '0002_inbox_order', sql: mysql0002 },
  ],
  sqlite: [
    { version: 1, name: '0001_init', sql: sqlite0001 },
    { version: 2, name: '0002_inbox_order', sql: sqlite0002 },
  ],
}
