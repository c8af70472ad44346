import type { Config } from '../config.ts'
import { createDb } from '../db/index.ts'
import { migrate } from '../db/migrate.ts'

export async function run(config: Config): Promise<number> {
  const db = createDb(config)
  try {
    const { applied, current } = await migrate(db)
    console.log(applied.length > 0 ? `applied ${applied.join(', ')}; schema at version ${current}` : `schema up to date at version ${current}`)
    return 0
  } catch (error) {
    console.error(`spaces-api migrate: ${(error as Error).message}`)
    return 1
  } finally {
    await db.close()
  }
}
