import { t } from 'elysia'

export const Health = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('error')]),
  db: t.Object({
    status: t.Union([t.Literal('ok'), t.Literal('error')]),
    latencyMs: t.Number({ minimum: 0 }),
  }),
  sha: t.String(),
  uptimeSec: t.Integer({ minimum: 0 }),
  node: t.String(),
}, { title: 'Health' })
export type Health = typeof Health.static
