import { Elysia } from 'elysia'
import type { AuthenticatedAdmin, AuthService } from '../features/auth/service.ts'
import { Forbidden } from './errors.ts'
import { security } from './openapi.ts'

/**
 * The admin guard, switched on per route: `{ auth: 'any' }` for any signed-in admin,
 * `{ auth: 'superadmin' }` for user management. It resolves `admin` for the handler.
 *
 * The check runs in `transform`, before the body and query are validated, so a caller without a
 * valid token learns nothing about a route's schema: 401 comes before 400. The route's OpenAPI
 * operation gets the bearer requirement from here, so the document cannot forget one.
 */
export function authGuard(auth: AuthService) {
  const admins = new WeakMap<Request, AuthenticatedAdmin>()
  return new Elysia({ name: 'http.auth-guard' }).macro({
    auth: (role: 'any' | 'superadmin') => ({
      detail: { security: security.bearer },
      async transform({ request }) {
        const admin = await auth.authenticate(request)
        if (role === 'superadmin' && admin.role !== 'superadmin') throw new Forbidden('Only a superadmin may do this')
        admins.set(request, admin)
      },
      resolve({ request }) {
        return { admin: admins.get(request)! }
      },
    }),
  })
}

export type AuthGuard = ReturnType<typeof authGuard>
