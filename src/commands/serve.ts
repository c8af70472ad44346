import { createApp, createDeps } from '../app.ts'
import type { Config } from '../config.ts'
import { createDb } from '../db/index.ts'
import { migrate } from '../db/migrate.ts'
import { log } from '../lib/log.ts'

/**
 * Far above any limit of ours, so that the app, not Bun, refuses an oversize body: Bun's own 413
 * has no JSON envelope and no CORS headers, which the admin portal would see as a network error.
 * The app refuses a declared length over its limit unread, and stops reading a chunked body there.
 */
const MAX_REQUEST_BODY = 1024 * 1024 * 1024

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
  const deps = createDeps(config, db)
  const app = createApp(deps)
  app.listen({ port: config.port, maxRequestBodySize: MAX_REQUEST_BODY, idleTimeout: config.server.idleTimeoutSec })
  log.info({ port: config.port, db: config.db.driver, env: config.env }, 'listening')

  /**
   * SIGTERM or SIGINT: stop accepting connections (and answer /health with 503 on the ones still
   * open), let requests in flight finish, uploads included, then the outbox's message in flight,
   * then close the database and exit 0; all within SHUTDOWN_TIMEOUT, else exit 1. A second signal
   * exits at once with 130.
   */
  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) {
      log.warn({ event: 'shutdown', phase: 'forced', signal }, 'shutdown: second signal, exiting now')
      process.exit(130)
    }
    stopping = true
    const timer = setTimeout(() => {
      log.error({ event: 'shutdown', phase: 'timeout', seconds: config.server.shutdownTimeoutSec }, 'shutdown: timed out, exiting')
      process.exit(1)
    }, config.server.shutdownTimeoutSec * 1000)
    deps.lifecycle.draining = true
    log.info({ event: 'shutdown', phase: 'draining', signal }, 'shutdown: no new connections; finishing requests in flight')
    await app.server?.stop(false)
    log.info({ event: 'shutdown', phase: 'requests_done' }, 'shutdown: requests in flight finished')
    await deps.background.stop()
    log.info({ event: 'shutdown', phase: 'background_done' }, 'shutdown: outbox and upload queue stopped')
    deps.mailer.close()
    await db.close()
    log.info({ event: 'shutdown', phase: 'done' }, 'shutdown: database closed, exiting')
    clearTimeout(timer)
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
  return -1
}
