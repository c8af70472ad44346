import { Elysia } from 'elysia'
import type { AuthService } from '../features/auth/service.ts'
import { Forbidden } from './errors.ts'

/**
 * The admin guard, switched on per route: `{ auth: 'any' }` for any signed-in admin,
 * `{ auth: 'superadmin' }` for user management. It resolves `admin` for the handler.
 */
export function authGuard(auth: AuthService) {
  return new Elysia({ name: 'http.auth-guard' }).macro({
    auth: (role: 'any' | 'superadmin') => ({
      async resolve({ request }) {
        const admin = await auth.authenticate(request)
        if (role === 'superadmin' && admin.role !== 'superadmin') throw new Forbidden('Only a superadmin may do this')
        return { admin }
      },
    }),
  })
}

export type AuthGuard = ReturnType<typeof authGuard>
