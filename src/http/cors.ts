import { Elysia } from 'elysia'
import { requestIdOf } from './request.ts'

interface Policy {
  origins: ReadonlySet<string>
  credentials: boolean
  methods: string
  headers: string
}

const MAX_AGE = '86400'
const EXPOSE = 'X-Request-Id, Retry-After, ETag'

/**
 * The two CORS policies of api.md, chosen by path in this one place so that every response of a CORS
 * route (errors included) carries them. An origin outside the list gets no Access-Control-Allow-*
 * header at all and the browser blocks the read (decision 29); wildcards never reach here (config
 * refuses them), so credentials are never combined with `*`.
 */
export function cors(options: { publicOrigins: readonly string[]; adminOrigins: readonly string[] }) {
  const publicPolicy: Policy = {
    origins: new Set(options.publicOrigins),
    credentials: false,
    methods: 'GET, POST, OPTIONS',
    headers: 'Content-Type',
  }
  const adminPolicy: Policy = {
    origins: new Set(options.adminOrigins),
    credentials: true,
    methods: 'GET, POST, PATCH, DELETE, OPTIONS',
    headers: 'Authorization, Content-Type',
  }
  const policyFor = (path: string): Policy | undefined => {
    if (path === '/admin' || path.startsWith('/admin/')) return adminPolicy
    if (path === '/enquiries' || path.startsWith('/spaces/')) return publicPolicy
    return undefined
  }

  return new Elysia({ name: 'http.cors', seed: options }).onRequest(({ request, set }) => {
    const path = new URL(request.url).pathname
    const policy = policyFor(path)
    if (!policy) return
    const headers: Record<string, string> = { vary: 'Origin' }
    const origin = request.headers.get('origin')
    if (origin && policy.origins.has(origin)) {
      headers['access-control-allow-origin'] = origin
      if (policy.credentials) headers['access-control-allow-credentials'] = 'true'
      headers['access-control-expose-headers'] = EXPOSE
    }
    Object.assign(set.headers, headers)
    if (request.method === 'OPTIONS') {
      if (headers['access-control-allow-origin']) {
        headers['access-control-allow-methods'] = policy.methods
        headers['access-control-allow-headers'] = policy.headers
        headers['access-control-max-age'] = MAX_AGE
      }
      // Answered here, before routing: a preflight needs no handler and no body.
      return new Response(null, {
        status: 204,
        headers: { ...(set.headers as Record<string, string>), ...headers, 'x-request-id': requestIdOf(request) },
      })
    }
  })
}

/** Whether an `Origin` header, when present, is one of the admin origins (decision 26). */
export function isAdminOriginAllowed(request: Request, adminOrigins: readonly string[]): boolean {
  const origin = request.headers.get('origin')
  return origin === null || adminOrigins.includes(origin)
}
