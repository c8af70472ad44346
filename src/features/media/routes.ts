import { Elysia, t } from 'elysia'
import type { AuthGuard } from '../../http/guard.ts'
import { BODY_ERRORS, errors, IdParams } from '../../http/schemas.ts'
import { Ok } from '../auth/model.ts'
import { Category, ListQuery, MediaImage, OrderBody, UpdateBody, UploadForm, VisibilityBody } from './model.ts'
import type { MediaService } from './service.ts'

const One = t.Object({ image: MediaImage })

/** Admin media management: any signed-in admin. */
export function mediaRoutes(media: MediaService, guard: AuthGuard) {
  return new Elysia({ name: 'feature.media', prefix: '/admin/media' })
    .use(guard)
    .get('/categories', () => media.categories(), { auth: 'any', response: { 200: t.Object({ categories: t.Array(Category) }), ...errors(401) } })
    .get('/', ({ query }) => media.list(query), {
      auth: 'any',
      query: ListQuery,
      response: { 200: t.Object({ images: t.Array(MediaImage) }), ...errors(400, 401) },
    })
    .post(
      '/',
      async ({ request, admin, set }) => {
        const image = await media.upload(request, admin.id)
        set.status = 201
        return { image }
      },
      // The body is read by the handler (after the guard, with the upload cap; see http/body.ts), so
      // it has no schema for Elysia to check; the document shows the form.
      {
        auth: 'any',
        response: { 201: One, ...errors(...BODY_ERRORS, 401, 422, 507) },
        detail: { requestBody: { required: true, content: { 'multipart/form-data': UploadForm } } },
      },
    )
    // Before '/:id' so that "order" is never taken for an id.
    .patch('/order', ({ body }) => media.order(body.page, body.ids), {
      auth: 'any',
      body: OrderBody,
      response: { 200: Ok, ...errors(...BODY_ERRORS, 401, 422) },
    })
    .patch('/:id', ({ params, body }) => media.update(params.id, body), {
      auth: 'any',
      params: IdParams,
      body: UpdateBody,
      response: { 200: One, ...errors(...BODY_ERRORS, 401, 404, 422) },
    })
    .patch('/:id/visibility', ({ params, body }) => media.setVisible(params.id, body.isVisible), {
      auth: 'any',
      params: IdParams,
      body: VisibilityBody,
      response: { 200: One, ...errors(...BODY_ERRORS, 401, 404) },
    })
    .delete(
      '/:id',
      async ({ params, set }) => {
        await media.remove(params.id)
        set.status = 204
      },
      { auth: 'any', params: IdParams, response: { 204: t.Void(), ...errors(401, 404) } },
    )
}
