import { withHeaders } from '@elysiajs/openapi'
import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { isAdminOriginAllowed } from '../../http/cors.ts'
import { Forbidden } from '../../http/errors.ts'
import type { AuthGuard } from '../../http/guard.ts'
import { security } from '../../http/openapi.ts'
import { BODY_ERRORS, errors } from '../../http/schemas.ts'
import { clearedRefreshCookie, readRefreshCookie, REFRESH_COOKIE, refreshCookie } from './cookie.ts'
import { ForgotBody, LoginBody, MeResponse, Ok, ResetBody, SessionResponse } from './model.ts'
import type { AuthService, Session } from './service.ts'

// The refresh cookie, as the document shows it on the responses that set or clear it.
const SetsCookie = withHeaders(SessionResponse, {
  'set-cookie': t.String({ description: `${REFRESH_COOKIE}=<token>; Max-Age=<REFRESH_TOKEN_TTL>; Path=/admin/auth; HttpOnly; Secure; SameSite=None; Partitioned` }),
})
const ClearsCookie = withHeaders(Ok, {
  'set-cookie': t.String({ description: `${REFRESH_COOKIE}=; Max-Age=0; Path=/admin/auth; HttpOnly; Secure; SameSite=None; Partitioned` }),
})

export function authRoutes({ config, clientIp }: Pick<Deps, 'config' | 'clientIp'>, auth: AuthService, guard: AuthGuard) {
  const client = (request: Request, server: Parameters<Deps['clientIp']>[1]) => ({
    ip: clientIp(request, server),
    userAgent: request.headers.get('user-agent'),
  })
  const issue = (set: { headers: Record<string, unknown> }, session: Session) => {
    set.headers['set-cookie'] = refreshCookie(session.refreshToken, config.auth.refreshTtlSec)
    set.headers['cache-control'] = 'no-store'
    return { accessToken: session.accessToken, admin: session.admin }
  }
  // Decision 26: the cookie routes (the two that read it, and login, which sets it) refuse a foreign Origin.
  const sameOrigin = (request: Request) => {
    if (!isAdminOriginAllowed(request, config.cors.adminOrigins)) throw new Forbidden('Origin not allowed')
  }

  return new Elysia({ name: 'feature.auth', prefix: '/admin/auth' })
    .use(guard)
    .post('/login', async ({ body, request, server, set }) => issue(set, await auth.login(body, client(request, server))), {
      // Login sets the refresh cookie too: a foreign page must not sign the portal in as someone
      // else (login CSRF, with a form post that needs no preflight). Checked before the body.
      transform: ({ request }) => sameOrigin(request),
      body: LoginBody,
      response: { 200: SetsCookie, ...errors(...BODY_ERRORS, 401, 403, 429) },
    })
    .post(
      '/refresh',
      async ({ request, server, set }) => {
        sameOrigin(request)
        try {
          return issue(set, await auth.refresh(readRefreshCookie(request), client(request, server)))
        } catch (error) {
          set.headers['set-cookie'] = clearedRefreshCookie()
          throw error
        }
      },
      { response: { 200: SetsCookie, ...errors(401, 403) }, detail: { security: security.refreshCookie } },
    )
    .post(
      '/logout',
      async ({ request, set }) => {
        sameOrigin(request)
        await auth.logout(readRefreshCookie(request))
        set.headers['set-cookie'] = clearedRefreshCookie()
        return { ok: true as const }
      },
      { response: { 200: ClearsCookie, ...errors(403) }, detail: { security: security.refreshCookie } },
    )
    .post(
      '/forgot-password',
      ({ body }) => {
        auth.forgotPassword(body.email)
        return { ok: true as const }
      },
      { body: ForgotBody, response: { 200: Ok, ...errors(...BODY_ERRORS) } },
    )
    .post(
      '/reset-password',
      async ({ body }) => {
        await auth.resetPassword(body.token, body.password)
        return { ok: true as const }
      },
      { body: ResetBody, response: { 200: Ok, ...errors(...BODY_ERRORS, 429) } },
    )
    .get('/me', ({ admin }) => ({ admin: { id: admin.id, name: admin.name, phone: admin.phone, email: admin.email, role: admin.role, status: admin.status } }), {
      auth: 'any',
      response: { 200: MeResponse, ...errors(401) },
    })
}
