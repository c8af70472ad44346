import type { Config } from './config.ts'
import type { Db } from './db/db.ts'
import type { Background } from './lib/background.ts'
import type { Clock } from './lib/clock.ts'
import type { Mailer } from './lib/mailer.ts'
import type { Outbox } from './features/enquiries/outbox.ts'

/** What the features are built from; `main` makes the real ones, tests make their own. */
export interface Deps {
  config: Config
  db: Db
  clock: Clock
  mailer: Mailer
  /** Enquiry notifications that have not left yet (decision 6); runs while the app listens. */
  outbox: Outbox
  /** Started when the app listens; `await background.stop()` after `app.stop()`, before closing the db. */
  background: Background
  /** `draining` once `serve` began to shut down: `/health` then answers 503. */
  lifecycle: { draining: boolean }
  /** The client address of a request (decision 30). */
  clientIp: (request: Request, server: { requestIP(r: Request): { address: string } | null } | null) => string
}
