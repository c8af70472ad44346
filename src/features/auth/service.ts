import { ulid } from 'ulid'
import type { Deps } from '../../deps.ts'
import { hashIp } from '../../http/client-ip.ts'
import { BadRequest, ServiceUnavailable, TooManyRequests, Unauthorized } from '../../http/errors.ts'
import { log } from '../../lib/log.ts'
import { hashPassword, passwordProblem, verifyPassword } from '../../lib/passwords.ts'
import { normalizePhone } from '../../lib/phone.ts'
import { SlidingWindow } from '../../lib/sliding-window.ts'
import type { Admin } from '../users/model.ts'
import {
  addLoginFailure,
  findUserByEmail,
  findUserById,
  findUserByPhone,
  lockUser,
  recordLogin,
  setPasswordHash,
  toAdmin,
  type UserRecord,
} from '../users/queries.ts'
import { inviteMail, resetPasswordMail } from './mail.ts'
import {
  consumeAuthToken,
  findLiveAuthToken,
  findRefreshToken,
  insertAuthToken,
  insertRefreshToken,
  isFamilyLive,
  markReplaced,
  retireAuthTokens,
  revokeFamily,
  revokeUserSessions,
  type AuthTokenPurpose,
} from './queries.ts'
import { accessTokens, randomToken, tokenHash } from './tokens.ts'

export const LOGIN_FAILED = 'Invalid phone number or password'
export const LOGIN_THROTTLED = 'Too many failed logins; try again later'
const INVALID_TOKEN = 'This link is invalid or has expired'

const MAX_FAILURES = 10
const LOCK_MS = 15 * 60_000
const IP_FAILURES = 30
const AUTH_TOKEN_TTL_MS = 60 * 60_000

export interface Session {
  accessToken: string
  refreshToken: string
  admin: Admin
}

/** The signed-in admin of a request, with the refresh family its access token belongs to. */
export type AuthenticatedAdmin = Admin & { familyId: string }

export interface ClientContext {
  ip: string
  userAgent: string | null
}

export type AuthService = ReturnType<typeof createAuthService>

/** Login, sessions, reset and invite links: everything that issues or checks a credential. */
export function createAuthService({ config, db, clock, mailer }: Pick<Deps, 'config' | 'db' | 'clock' | 'mailer'>) {
  const access = accessTokens(config.auth.accessSecret, config.auth.accessTtlSec)
  // Decision 17: per IP, and per phone that matches no account (known accounts lock in their row).
  const ipFailures = new SlidingWindow(IP_FAILURES, LOCK_MS)
  const unknownPhoneFailures = new SlidingWindow(MAX_FAILURES, LOCK_MS)
  const ipKey = (ip: string) => hashIp(ip, config.ipHashSalt)

  async function startSession(user: UserRecord, client: ClientContext, now: Date, familyId = ulid()): Promise<Session> {
    const refreshToken = randomToken()
    await insertRefreshToken(db, {
      id: ulid(),
      userId: user.id,
      familyId,
      hash: tokenHash(refreshToken),
      expiresAt: new Date(now.getTime() + config.auth.refreshTtlSec * 1000),
      userAgent: client.userAgent?.slice(0, 255) ?? null,
      ipHash: ipKey(client.ip),
      now,
    })
    const accessToken = access.sign({ userId: user.id, role: user.role, familyId }, now)
    return { accessToken, refreshToken, admin: toAdmin(user) }
  }

  async function issueLink(user: UserRecord, purpose: AuthTokenPurpose): Promise<void> {
    if (!user.email) throw new Error('user has no e-mail')
    const now = clock.now()
    const token = randomToken()
    await db.transaction(async (tx) => {
      await retireAuthTokens(tx, user.id, now)
      await insertAuthToken(tx, {
        id: ulid(),
        userId: user.id,
        purpose,
        hash: tokenHash(token),
        expiresAt: new Date(now.getTime() + AUTH_TOKEN_TTL_MS),
        now,
      })
    })
    const portal = config.auth.adminPortalUrl
    const mail =
      purpose === 'invite'
        ? inviteMail(user.email, user.name, `${portal}/accept-invite?token=${token}`)
        : resetPasswordMail(user.email, user.name, `${portal}/reset-password?token=${token}`)
    await mailer.send(mail)
    log.info({ event: `${purpose}_link_sent`, userId: user.id }, `${purpose} link sent`)
  }

  return {
    async login(input: { phone: string; password: string }, client: ClientContext): Promise<Session> {
      const now = clock.now()
      const t = now.getTime()
      const ip = ipKey(client.ip)
      const ipWait = ipFailures.retryAfter(ip, t)
      if (ipWait > 0) {
        log.warn({ event: 'login_throttled', scope: 'ip' }, 'login throttled')
        throw new TooManyRequests(LOGIN_THROTTLED, ipWait)
      }
      const phone = normalizePhone(input.phone, config.auth.phoneDefaultCountry)
      const phoneKey = phone ?? `unparsed:${input.phone.trim().slice(0, 32)}`
      const user = phone ? await findUserByPhone(db, phone) : undefined
      const lockedFor = user
        ? user.lockedUntil && user.lockedUntil > now
          ? Math.ceil((user.lockedUntil.getTime() - t) / 1000)
          : 0
        : unknownPhoneFailures.retryAfter(phoneKey, t)
      if (lockedFor > 0) {
        log.warn({ event: 'login_throttled', scope: 'phone', userId: user?.id ?? null }, 'login throttled')
        throw new TooManyRequests(LOGIN_THROTTLED, lockedFor)
      }

      const usable = user !== undefined && user.status === 'active' && user.passwordHash !== null
      const ok = await verifyPassword(input.password, usable ? user.passwordHash : null)
      if (!ok || !user) {
        ipFailures.add(ip, t)
        if (user) {
          const failures = await addLoginFailure(db, user.id)
          if (failures >= MAX_FAILURES) {
            await lockUser(db, user.id, new Date(t + LOCK_MS))
            log.warn({ event: 'login_locked', userId: user.id }, 'account locked after repeated failures')
          }
        } else {
          unknownPhoneFailures.add(phoneKey, t)
        }
        log.info({ event: 'login_failed', userId: user?.id ?? null }, 'login failed')
        throw new Unauthorized(LOGIN_FAILED)
      }
      await recordLogin(db, user.id, now)
      log.info({ event: 'login_succeeded', userId: user.id }, 'login succeeded')
      return startSession(user, client, now)
    },

    /** Rotates a refresh token (decision 27: one conditional update decides a race). */
    async refresh(token: string | undefined, client: ClientContext): Promise<Session> {
      if (!token) throw new Unauthorized('No session')
      const now = clock.now()
      const record = await findRefreshToken(db, tokenHash(token))
      if (!record) throw new Unauthorized('Session expired')
      if (record.revokedAt) {
        if (record.replacedBy) {
          await revokeFamily(db, record.familyId, now)
          log.warn({ event: 'refresh_token_reuse', userId: record.userId, familyId: record.familyId }, 'refresh token reused: family revoked')
        }
        throw new Unauthorized('Session expired')
      }
      if (record.expiresAt <= now) throw new Unauthorized('Session expired')
      const user = await findUserById(db, record.userId)
      if (!user || user.status !== 'active' || !user.passwordHash) {
        await revokeFamily(db, record.familyId, now)
        throw new Unauthorized('Session expired')
      }
      const nextId = ulid()
      const session = await db.transaction(async (tx) => {
        if (!(await markReplaced(tx, record.id, nextId, now))) return undefined
        const refreshToken = randomToken()
        await insertRefreshToken(tx, {
          id: nextId,
          userId: user.id,
          familyId: record.familyId,
          hash: tokenHash(refreshToken),
          expiresAt: new Date(now.getTime() + config.auth.refreshTtlSec * 1000),
          userAgent: client.userAgent?.slice(0, 255) ?? null,
          ipHash: ipKey(client.ip),
          now,
        })
        return refreshToken
      })
      if (!session) {
        await revokeFamily(db, record.familyId, now)
        log.warn({ event: 'refresh_token_reuse', userId: user.id, familyId: record.familyId }, 'concurrent refresh lost: family revoked')
        throw new Unauthorized('Session expired')
      }
      const accessToken = access.sign({ userId: user.id, role: user.role, familyId: record.familyId }, now)
      return { accessToken, refreshToken: session, admin: toAdmin(user) }
    },

    async logout(token: string | undefined): Promise<void> {
      if (!token) return
      const record = await findRefreshToken(db, tokenHash(token))
      if (!record) return
      const revoked = await revokeFamily(db, record.familyId, clock.now())
      if (revoked > 0) log.info({ event: 'session_revoked', reason: 'logout', userId: record.userId }, 'session ended')
    },

    /** Verifies a Bearer token and that its user and session are still live (decision 19). */
    async authenticate(request: Request): Promise<AuthenticatedAdmin> {
      const match = /^Bearer\s+([A-Za-z0-9\-_.]+)$/.exec(request.headers.get('authorization') ?? '')
      if (!match) throw new Unauthorized('Authentication required')
      const now = clock.now()
      const claims = access.verify(match[1]!, now)
      if (!claims) throw new Unauthorized('Invalid or expired access token')
      const user = await findUserById(db, claims.userId)
      if (!user || user.status !== 'active' || user.role !== claims.role || !(await isFamilyLive(db, claims.familyId, now))) {
        throw new Unauthorized('Invalid or expired access token')
      }
      return { ...toAdmin(user), familyId: claims.familyId }
    },

    /** Answers at once; the lookup and the e-mail happen afterwards, so timing tells nothing. */
    forgotPassword(email: string): void {
      void (async () => {
        const user = await findUserByEmail(db, email.trim())
        if (user && user.status === 'active') await issueLink(user, 'reset')
      })().catch((error) => log.error({ event: 'reset_link_failed', err: error }, 'reset link not sent'))
    },

    async resetPassword(token: string, password: string): Promise<void> {
      const now = clock.now()
      const hash = tokenHash(token)
      const pending = await findLiveAuthToken(db, hash, now)
      const user = pending && (await findUserById(db, pending.userId))
      if (!user || user.status !== 'active') throw new BadRequest(INVALID_TOKEN, { token: 'is invalid or has expired' })
      const problem = passwordProblem(password, user)
      if (problem) throw new BadRequest(`Password ${problem}`, { password: problem })
      const passwordHash = await hashPassword(password)
      await db.transaction(async (tx) => {
        const userId = await consumeAuthToken(tx, hash, now)
        if (userId !== user.id) throw new BadRequest(INVALID_TOKEN, { token: 'is invalid or has expired' })
        await setPasswordHash(tx, user.id, passwordHash, now)
        await revokeUserSessions(tx, user.id, now)
      })
      log.info({ event: 'password_reset', userId: user.id }, 'password set from a link; all sessions ended')
    },

    async changeOwnPassword(admin: AuthenticatedAdmin, current: string, next: string): Promise<void> {
      const user = await findUserById(db, admin.id)
      if (!user) throw new Unauthorized()
      if (!(await verifyPassword(current, user.passwordHash))) {
        throw new BadRequest('Current password is wrong', { currentPassword: 'is wrong' })
      }
      const problem = passwordProblem(next, user)
      if (problem) throw new BadRequest(`New password ${problem}`, { newPassword: problem })
      const now = clock.now()
      const passwordHash = await hashPassword(next)
      await db.transaction(async (tx) => {
        await setPasswordHash(tx, user.id, passwordHash, now)
        await revokeUserSessions(tx, user.id, now, admin.familyId)
      })
      log.info({ event: 'password_changed', userId: user.id }, 'password changed; other sessions ended')
    },

    /** E-mails a reset (or invite) link; throws 503 when the message could not be sent. */
    async sendLink(user: UserRecord, purpose: AuthTokenPurpose): Promise<void> {
      try {
        await issueLink(user, purpose)
      } catch (error) {
        log.error({ event: `${purpose}_link_failed`, userId: user.id, err: error }, `${purpose} link not sent`)
        throw new ServiceUnavailable('The e-mail could not be sent; try again later')
      }
    },

    async endSessions(userId: string, reason: string): Promise<void> {
      const revoked = await revokeUserSessions(db, userId, clock.now())
      log.info({ event: 'session_revoked', reason, userId, count: revoked }, 'sessions ended')
    },

    hashPassword,
  }
}
