import { t } from 'elysia'
import { Admin } from '../users/model.ts'

export const LoginBody = t.Object({
  phone: t.String({ minLength: 1, maxLength: 32 }),
  password: t.String({ minLength: 1, maxLength: 1024 }),
})

export const SessionResponse = t.Object({ accessToken: t.String(), admin: Admin })
export const MeResponse = t.Object({ admin: Admin })
export const Ok = t.Object({ ok: t.Literal(true) })

export const ForgotBody = t.Object({ email: t.String({ format: 'email', maxLength: 254 }) })
export const ResetBody = t.Object({
  token: t.String({ minLength: 1, maxLength: 200 }),
  password: t.String({ minLength: 1, maxLength: 1024 }),
})
