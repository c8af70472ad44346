import { Elysia } from 'elysia'
import type { Config } from './config.ts'
import type { Db } from './db/db.ts'
import type { Deps } from './deps.ts'
import { healthRoutes } from './features/health/routes.ts'
import { bodyParser } from './http/body.ts'
import { clientIpResolver } from './http/client-ip.ts'
import { cors } from './http/cors.ts'
import { errorFormatter } from './http/errors.ts'
import { requestHeaders } from './http/request.ts'
import { systemClock, type Clock } from './lib/clock.ts'

export function createDeps(config: Config, db: Db, clock: Clock = systemClock): Deps {
  const resolve = clientIpResolver(config.trustProxy)
  return {
    config,
    db,
    clock,
    clientIp: (request, server) => resolve(server?.requestIP(request)?.address, request.headers.get('x-forwarded-for')),
  }
}

/** Composes the plumbing and the feature plugins; nothing else is wired anywhere. */
export function createApp(deps: Deps) {
  const { config } = deps
  return new Elysia({ name: 'spaces-api' })
    .use(requestHeaders({ production: config.isProduction }))
    .use(cors(config.cors))
    .use(errorFormatter)
    .use(bodyParser)
    .use(healthRoutes(deps))
}

export type App = ReturnType<typeof createApp>
