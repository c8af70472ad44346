import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import type { AuthGuard } from '../../http/guard.ts'
import { BODY_ERRORS, errors, IdParams, Meta, okErrors } from '../../http/schemas.ts'
import type { Inbox } from './inbox.ts'
import { Accepted, EnquiryDetail, EnquiryListItem, InboxQuery, ReplyBody, StatusBody, SubmissionBody } from './model.ts'
import type { createEnquiryService } from './service.ts'

/** The public submission: unauthenticated, under the public CORS policy. */
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
    { body: SubmissionBody, response: { 200: Accepted, ...okErrors(...BODY_ERRORS, 422, 429) } },
  )
}

const Detail = t.Object({ enquiry: EnquiryDetail })

/** The admin inbox: any signed-in admin. */
export function inboxRoutes(inbox: Inbox, guard: AuthGuard) {
  return new Elysia({ name: 'feature.enquiries.admin', prefix: '/admin/enquiries' })
    .use(guard)
    .get('/', ({ query }) => inbox.list(query), {
      auth: 'any',
      query: InboxQuery,
      response: { 200: t.Object({ data: t.Array(EnquiryListItem), meta: Meta }), ...errors(400, 401) },
    })
    .get('/:id', async ({ params }) => ({ enquiry: await inbox.open(params.id) }), {
      auth: 'any',
      params: IdParams,
      response: { 200: Detail, ...errors(401, 404) },
    })
    .patch('/:id', async ({ params, body, admin }) => ({ enquiry: await inbox.setStatus(params.id, body.status, admin.id) }), {
      auth: 'any',
      params: IdParams,
      body: StatusBody,
      response: { 200: Detail, ...errors(...BODY_ERRORS, 401, 404) },
    })
    .post(
      '/:id/replies',
      async ({ params, body, admin, set }) => {
        const enquiry = await inbox.reply(params.id, admin, body.body)
        set.status = 201
        return { enquiry }
      },
      { auth: 'any', params: IdParams, body: ReplyBody, response: { 201: Detail, ...errors(...BODY_ERRORS, 401, 404) } },
    )
}
