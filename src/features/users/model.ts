import { t } from 'elysia'
import { Paging } from '../../http/schemas.ts'

export const Role = t.Union([t.Literal('superadmin'), t.Literal('admin')])
export const Status = t.Union([t.Literal('active'), t.Literal('inactive')])
export type Role = typeof Role.static
export type Status = typeof Status.static

/** The `admin` object of login, refresh and me. */
export const Admin = t.Object({
  id: t.String(),
  name: t.String(),
  phone: t.String(),
  email: t.Nullable(t.String()),
  role: Role,
  status: Status,
}, { title: 'Admin' })
export type Admin = typeof Admin.static

export const User = t.Object({
  ...Admin.properties,
  hasPassword: t.Boolean(),
  lastLoginAt: t.Nullable(t.String()),
  createdBy: t.Nullable(t.String()),
  createdAt: t.String(),
  updatedAt: t.String(),
}, { title: 'User' })
export type User = typeof User.static

// The pattern refuses a name of only spaces, which the handler's trim would store as ''.
const Name = t.String({ minLength: 1, maxLength: 120, pattern: '\\S' })
const Email = t.String({ format: 'email', maxLength: 254 })
const Phone = t.String({ minLength: 1, maxLength: 32 })

export const CreateUserBody = t.Object({
  name: Name,
  phone: Phone,
  email: t.Optional(t.Nullable(Email)),
  role: t.Optional(Role),
  password: t.Optional(t.String({ maxLength: 1024 })),
})

export const UpdateUserBody = t.Object({
  name: t.Optional(Name),
  phone: t.Optional(Phone),
  email: t.Optional(t.Nullable(Email)),
  role: t.Optional(Role),
  status: t.Optional(Status),
})

export const PasswordBody = t.Object({
  currentPassword: t.Optional(t.String({ maxLength: 1024 })),
  newPassword: t.Optional(t.String({ maxLength: 1024 })),
})

export const ListQuery = t.Object({
  q: t.Optional(t.String({ maxLength: 200 })),
  status: t.Optional(Status),
  role: t.Optional(Role),
  ...Paging,
  sort: t.Optional(t.Union([t.Literal('newest'), t.Literal('oldest'), t.Literal('name')])),
})
