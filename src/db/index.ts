import type { Config } from '../config.ts'
import type { Db } from './db.ts'
import { createMysqlDb } from './mysql.ts'
import { createSqliteDb } from './sqlite.ts'

export type { Db } from './db.ts'

export function createDb(config: Pick<Config, 'db'>): Db {
  const db = config.db
  return db.driver === 'sqlite'
    ? createSqliteDb(db.path)
    : createMysqlDb({ host: db.host, port: db.port, user: db.user, password: db.password, database: db.name, poolMax: db.poolMax })
}
