import { Elysia } from 'elysia'

const ids = new WeakMap<Request, string>()

/** The id given to this request; it is echoed in `X-Request-Id` and written beside every log line. */
export function requestIdOf(request: Request): string {
  let id = ids.get(request)
  if (!id) {
    id = crypto.randomUUID()
    ids.set(request, id)
  }
  return id
}

/** Request id and the security headers of decision 33, on every response including errors. */
export function requestHeaders(options: { production: boolean }) {
  return new Elysia({ name: 'http.request', seed: options }).onRequest(({ request, set }) => {
    set.headers['x-request-id'] = requestIdOf(request)
    set.headers['x-content-type-options'] = 'nosniff'
    set.headers['referrer-policy'] = 'no-referrer'
    set.headers['x-frame-options'] = 'DENY'
    if (options.production) set.headers['strict-transport-security'] = 'max-age=31536000'
  })
}
