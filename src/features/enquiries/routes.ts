import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { Accepted, SubmissionBody } from './model.ts'
import type { createEnquiryService } from './service.ts'

export function enquiryRoutes({ clientIp }: Pick<Deps, 'clientIp'>, enquiries: ReturnType<typeof createEnquiryService>) {
  return new Elysia({ name: 'feature.enquiries' }).post(
    '/enquiries',
    async ({ body, request, server }) => {
      const id = await enquiries.submit(body, {
        ip: clientIp(request, server),
        userAgent: request.headers.get('user-agent'),
        referer: request.headers.get('referer'),
      })
      return { ok: true as const, id }
    },
    { body: SubmissionBody, response: { 200: Accepted } },
  )
}
