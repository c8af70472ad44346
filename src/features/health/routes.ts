import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { errors } from '../../http/schemas.ts'
import { Health } from './model.ts'

const PING_TIMEOUT_MS = 2000

export function healthRoutes({ db, config, lifecycle }: Pick<Deps, 'db' | 'config' | 'lifecycle'>) {
  return new Elysia({ name: 'feature.health' }).get(
    '/health',
    async ({ set }): Promise<Health> => {
      const started = performance.now()
      const dbOk = await ping(() => db.ping(), PING_TIMEOUT_MS)
      // Draining for a shutdown: a load balancer must stop sending traffic here.
      const ok = dbOk && !lifecycle.draining
      const body: Health = {
        status: ok ? 'ok' : 'error',
        db: { status: dbOk ? 'ok' : 'error', latencyMs: Math.round((performance.now() - started) * 100) / 100 },
        sha: config.gitSha,
        uptimeSec: Math.floor(process.uptime()),
        node: process.version,
      }
      set.status = ok ? 200 : 503
      set.headers['cache-control'] = 'no-store'
      return body
    },
    // Its 503 is the health object (the probe answered: the database is down, or the server drains).
    { response: { ...errors(), 200: Health, 503: Health } },
  )
}

/** True when the ping answered within the timeout; a hung database counts as down. */
async function ping(fn: () => Promise<void>, timeoutMs: number): Promise<boolean> {
  let timer: Timer | undefined
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs)
  })
  try {
    return await Promise.race([fn().then(() => true, () => false), timeout])
  } finally {
    clearTimeout(timer)
  }
}
