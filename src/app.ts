import { Elysia } from 'elysia'
import type { Config } from './config.ts'
import type { Db } from './db/db.ts'
import type { Deps } from './deps.ts'
import { authRoutes } from './features/auth/routes.ts'
import { createAuthService } from './features/auth/service.ts'
import { createInbox } from './features/enquiries/inbox.ts'
import { enquiryRoutes, inboxRoutes } from './features/enquiries/routes.ts'
import { createOutbox } from './features/enquiries/outbox.ts'
import { createEnquiryService } from './features/enquiries/service.ts'
import { createGalleryCache, galleryRoutes } from './features/gallery/routes.ts'
import { healthRoutes } from './features/health/routes.ts'
import { mediaFiles } from './features/media/files.ts'
import { mediaRoutes } from './features/media/routes.ts'
import { createMediaService } from './features/media/service.ts'
import { userRoutes } from './features/users/routes.ts'
import { bodyParser } from './http/body.ts'
import { clientIpResolver } from './http/client-ip.ts'
import { cors } from './http/cors.ts'
import { errorFormatter, learnQuerySchemas } from './http/errors.ts'
import { authGuard } from './http/guard.ts'
import { openapiDocument } from './http/openapi.ts'
import { requestHeaders } from './http/request.ts'
import { createBackground } from './lib/background.ts'
import { systemClock, type Clock } from './lib/clock.ts'
import { log } from './lib/log.ts'
import { createMailer, type Mailer } from './lib/mailer.ts'

export function createDeps(config: Config, db: Db, options: { clock?: Clock; mailer?: Mailer } = {}): Deps {
  const resolve = clientIpResolver(config.trustProxy)
  const clock = options.clock ?? systemClock
  const mailer = options.mailer ?? createMailer(config)
  const outbox = createOutbox({ config, db, clock, mailer })
  const background = createBackground()
  background.add(outbox)
  return {
    config,
    db,
    clock,
    mailer,
    outbox,
    background,
    lifecycle: { draining: false },
    clientIp: (request, server) => resolve(server?.requestIP(request)?.address, request.headers.get('x-forwarded-for')),
  }
}

/** Composes the plumbing and the feature plugins; nothing else is wired anywhere. */
export function createApp(deps: Deps) {
  const { config } = deps
  const auth = createAuthService(deps)
  const guard = authGuard(auth)
  const enquiries = createEnquiryService(deps)
  const inbox = createInbox(deps)
  deps.background.add(inbox)
  const gallery = createGalleryCache(deps)
  const media = createMediaService(deps, gallery.clear)
  deps.background.add({ start: () => void media.recover().catch((error) => log.error({ err: error }, 'media recovery failed')), stop: () => media.idle() })
  const app = new Elysia({ name: 'spaces-api' })
    .onStart(() => deps.background.start())
    .onStop(() => void deps.background.stop())
    .use(requestHeaders({ production: config.isProduction }))
    .use(cors(config.cors))
    .use(errorFormatter)
    .use(bodyParser({ timeoutMs: config.server.bodyTimeoutSec * 1000 }))
    .use(healthRoutes(deps))
    .use(authRoutes(deps, auth, guard))
    .use(userRoutes(deps, auth, guard))
    .use(enquiryRoutes(deps, enquiries))
    .use(inboxRoutes(inbox, guard))
    .use(galleryRoutes(gallery))
    .use(mediaRoutes(media, guard))
    .use(config.media.serve ? mediaFiles(config) : new Elysia({ name: 'feature.media.files.off' }))
    .use(openapiDocument())
  learnQuerySchemas(app.routes)
  return app
}

export type App = ReturnType<typeof createApp>
