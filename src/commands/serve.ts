import { createApp, createDeps } from '../app.ts'
import type { Config } from '../config.ts'
import { createDb } from '../db/index.ts'
import { migrate } from '../db/migrate.ts'
import { log } from '../lib/log.ts'

/** Upload limit plus room for the multipart envelope; smaller bodies are capped per route. */
const MAX_REQUEST_BODY = 26 * 1024 * 1024

export async function run(config: Config): Promise<number> {
  if (config.port === undefined) {
    console.error('spaces-api serve: PORT is required (the port to listen on)')
    return 1
  }
  const db = createDb(config)
  try {
    const { applied } = await migrate(db)
    if (applied.length > 0) log.info({ applied }, 'migrations applied')
  } catch (error) {
    console.error(`spaces-api serve: migration failed: ${(error as Error).message}`)
    await db.close()
    return 1
  }
  const app = createApp(createDeps(config, db))
  app.listen({ port: config.port, maxRequestBodySize: MAX_REQUEST_BODY })
  log.info({ port: config.port, db: config.db.driver, env: config.env }, 'listening')
  return -1
}
