import { Elysia, t } from 'elysia'
import { ulid } from 'ulid'
import type { Deps } from '../../deps.ts'
import { BadRequest, Forbidden, Unprocessable, type Fields } from '../../http/errors.ts'
import type { AuthGuard } from '../../http/guard.ts'
import { log } from '../../lib/log.ts'
import { passwordProblem } from '../../lib/passwords.ts'
import { normalizePhone } from '../../lib/phone.ts'
import { Ok } from '../auth/model.ts'
import type { AuthService } from '../auth/service.ts'
import { BODY_ERRORS, errors, findOr404, IdParams, Meta, paging } from '../../http/schemas.ts'
import { CreateUserBody, ListQuery, PasswordBody, UpdateUserBody, User } from './model.ts'
import {
  findUserByEmail,
  findUserById,
  findUserByPhone,
  insertUser,
  listUsers,
  lockActiveSuperadmins,
  toUser,
  updateUser,
  type UserChanges,
  type UserRecord,
} from './queries.ts'

export function userRoutes({ config, db, clock }: Pick<Deps, 'config' | 'db' | 'clock'>, auth: AuthService, guard: AuthGuard) {
  const country = config.auth.phoneDefaultCountry

  const load = (id: string): Promise<UserRecord> => findOr404(id, (key) => findUserById(db, key), 'No such user')

  /** Normalises phone and e-mail and checks both are free (422 with fields when not). */
  const checkContact = async (input: { phone?: string; email?: string | null }, self?: string) => {
    const fields: Fields = {}
    let phone: string | undefined
    if (input.phone !== undefined) {
      phone = normalizePhone(input.phone, country) ?? undefined
      if (!phone) throw new BadRequest('Invalid phone number', { phone: country ? 'is not a valid phone number' : 'must be a valid number in international form (+...)' })
      const owner = await findUserByPhone(db, phone)
      if (owner && owner.id !== self) fields.phone = 'is already used by another admin'
    }
    const email = input.email === undefined ? undefined : input.email === null ? null : input.email.trim()
    if (email) {
      const owner = await findUserByEmail(db, email)
      if (owner && owner.id !== self) fields.email = 'is already used by another admin'
    }
    if (Object.keys(fields).length > 0) throw new Unprocessable('Phone number or e-mail already in use', fields)
    return { phone, email }
  }

  return new Elysia({ name: 'feature.users', prefix: '/admin/users' })
    .use(guard)
    .get(
      '/',
      async ({ query }) => {
        const { page, perPage } = paging(query)
        const { users, total } = await listUsers(db, { ...query, page, perPage, sort: query.sort ?? 'newest' })
        return { data: users.map(toUser), meta: { page, perPage, total } }
      },
      { auth: 'superadmin', query: ListQuery, response: { 200: t.Object({ data: t.Array(User), meta: Meta }), ...errors(400, 401, 403) } },
    )
    .get('/:id', async ({ params }) => ({ user: toUser(await load(params.id)) }), {
      auth: 'superadmin',
      params: IdParams,
      response: { 200: t.Object({ user: User }), ...errors(401, 403, 404) },
    })
    .post(
      '/',
      async ({ body, admin, set }) => {
        const { phone, email } = await checkContact({ phone: body.phone, email: body.email ?? null })
        if (body.password === undefined && !email) {
          throw new BadRequest('Give a password, or an e-mail address for an invitation', { password: 'is required when there is no e-mail' })
        }
        if (body.password !== undefined) {
          const problem = passwordProblem(body.password, { phone, email })
          if (problem) throw new BadRequest(`Password ${problem}`, { password: problem })
        }
        const now = clock.now()
        const record = {
          id: ulid(),
          name: body.name.trim(),
          phone: phone!,
          email: email ?? null,
          role: body.role ?? 'admin',
          status: 'active' as const,
          passwordHash: body.password === undefined ? null : await auth.hashPassword(body.password),
          createdBy: admin.id,
          createdAt: now,
          updatedAt: now,
        }
        try {
          await insertUser(db, record)
        } catch (error) {
          // A concurrent create took the phone or e-mail between the check and the insert.
          if (/duplicate|unique/i.test(String((error as Error).message))) throw new Unprocessable('Phone number or e-mail already in use', { phone: 'or e-mail is already in use' })
          throw error
        }
        log.info({ event: 'user_created', userId: record.id, by: admin.id, invited: record.passwordHash === null }, 'admin user created')
        const created = await load(record.id)
        // Decision 20: without a password the user gets an invitation. The user exists either way;
        // a failed e-mail is logged and can be sent again through POST /admin/users/{id}/password.
        if (record.passwordHash === null) await auth.sendLink(created, 'invite').catch(() => {})
        set.status = 201
        return { user: toUser(created) }
      },
      { auth: 'superadmin', body: CreateUserBody, response: { 201: t.Object({ user: User }), ...errors(...BODY_ERRORS, 401, 403, 422, 429) } },
    )
    .patch(
      '/:id',
      async ({ params, body, admin }) => {
        const user = await load(params.id)
        const self = user.id === admin.id
        if (self && body.role !== undefined && body.role !== user.role) throw new BadRequest('You cannot change your own role', { role: 'cannot change your own role' })
        if (self && body.status === 'inactive') throw new BadRequest('You cannot deactivate yourself', { status: 'cannot deactivate yourself' })
        const losesSuperadmin =
          user.role === 'superadmin' && user.status === 'active' && ((body.role !== undefined && body.role !== 'superadmin') || body.status === 'inactive')
        const contact = await checkContact({ phone: body.phone, email: body.email }, user.id)
        const changes: UserChanges = {
          name: body.name?.trim(),
          phone: contact.phone,
          email: contact.email,
          role: body.role,
          status: body.status,
        }
        // The last-superadmin check and the change are one transaction: checked apart, two
        // superadmins demoting each other at the same moment both passed and left none.
        await db.transaction(async (tx) => {
          if (losesSuperadmin && (await lockActiveSuperadmins(tx)) <= 1) {
            throw new BadRequest('The last active superadmin must stay', { [body.status === 'inactive' ? 'status' : 'role']: 'would leave no active superadmin' })
          }
          await updateUser(tx, user.id, changes, clock.now())
        })
        const roleOrStatusChanged = (body.role !== undefined && body.role !== user.role) || (body.status !== undefined && body.status !== user.status)
        if (roleOrStatusChanged) await auth.endSessions(user.id, 'role or status changed')
        return { user: toUser(await load(user.id)) }
      },
      { auth: 'superadmin', params: IdParams, body: UpdateUserBody, response: { 200: t.Object({ user: User }), ...errors(...BODY_ERRORS, 401, 403, 404, 422) } },
    )
    .post(
      '/:id/password',
      async ({ params, body, admin }) => {
        if (params.id === admin.id) {
          const fields: Fields = {}
          if (!body.currentPassword) fields.currentPassword = 'is required'
          if (!body.newPassword) fields.newPassword = 'is required'
          if (Object.keys(fields).length > 0) throw new BadRequest('Current and new password are required', fields)
          await auth.changeOwnPassword(admin, body.currentPassword!, body.newPassword!)
          return { ok: true as const }
        }
        if (admin.role !== 'superadmin') throw new Forbidden('You may only change your own password')
        const user = await load(params.id)
        if (!user.email) throw new Unprocessable('This user has no e-mail address for a reset link', { email: 'is missing' })
        await auth.sendLink(user, 'reset')
        return { ok: true as const }
      },
      { auth: 'any', params: IdParams, body: PasswordBody, response: { 200: Ok, ...errors(...BODY_ERRORS, 401, 403, 404, 422, 429) } },
    )
}
