import sql, { empty } from 'sql-template-tag'
import type { Db } from '../../db/db.ts'
import { toDate, toDateOrNull } from '../../db/db.ts'

export interface RefreshTokenRecord {
  id: string
  userId: string
  familyId: string
  expiresAt: Date
  revokedAt: Date | null
  replacedBy: string | null
}

export async function insertRefreshToken(
  db: Db,
  t: { id: string; userId: string; familyId: string; hash: string; expiresAt: Date; userAgent: string | null; ipHash: string | null; now: Date },
): Promise<void> {
  await db.execute(sql`
    INSERT INTO refresh_tokens (id, user_id, family_id, token_hash, expires_at, user_agent, ip_hash, created_at)
    VALUES (${t.id}, ${t.userId}, ${t.familyId}, ${t.hash}, ${t.expiresAt}, ${t.userAgent}, ${t.ipHash}, ${t.now})`)
}

export async function findRefreshToken(db: Db, hash: string): Promise<RefreshTokenRecord | undefined> {
  const row = await db.one(sql`
    SELECT id, user_id, family_id, expires_at, revoked_at, replaced_by FROM refresh_tokens WHERE token_hash = ${hash}`)
  return (
    row && {
      id: row.id as string,
      userId: row.user_id as string,
      familyId: row.family_id as string,
      expiresAt: toDate(row.expires_at),
      revokedAt: toDateOrNull(row.revoked_at),
      replacedBy: (row.replaced_by as string | null) ?? null,
    }
  )
}

/** Marks a live token replaced; false when it was no longer live (another refresh won). */
export async function markReplaced(db: Db, id: string, replacedBy: string, now: Date): Promise<boolean> {
  const result = await db.execute(sql`
    UPDATE refresh_tokens SET revoked_at = ${now}, replaced_by = ${replacedBy} WHERE id = ${id} AND revoked_at IS NULL`)
  return result.affectedRows === 1
}

export async function revokeFamily(db: Db, familyId: string, now: Date): Promise<number> {
  const result = await db.execute(sql`
    UPDATE refresh_tokens SET revoked_at = ${now} WHERE family_id = ${familyId} AND revoked_at IS NULL`)
  return result.affectedRows
}

/** Ends every session of a user, or every one but `keepFamily` (a self password change). */
export async function revokeUserSessions(db: Db, userId: string, now: Date, keepFamily?: string): Promise<number> {
  const keep = keepFamily === undefined ? empty : sql`AND family_id <> ${keepFamily}`
  const result = await db.execute(sql`
    UPDATE refresh_tokens SET revoked_at = ${now} WHERE user_id = ${userId} AND revoked_at IS NULL ${keep}`)
  return result.affectedRows
}

/** A family is live while it holds a token that is neither revoked nor expired. */
export async function isFamilyLive(db: Db, familyId: string, now: Date): Promise<boolean> {
  const row = await db.one(sql`
    SELECT id FROM refresh_tokens WHERE family_id = ${familyId} AND revoked_at IS NULL AND expires_at > ${now} LIMIT 1`)
  return row !== undefined
}

export type AuthTokenPurpose = 'reset' | 'invite'

export async function insertAuthToken(
  db: Db,
  t: { id: string; userId: string; purpose: AuthTokenPurpose; hash: string; expiresAt: Date; now: Date },
): Promise<void> {
  await db.execute(sql`
    INSERT INTO auth_tokens (id, user_id, purpose, token_hash, expires_at, created_at)
    VALUES (${t.id}, ${t.userId}, ${t.purpose}, ${t.hash}, ${t.expiresAt}, ${t.now})`)
}

/** Older unused reset and invite tokens of a user stop working when a new one is issued. */
export async function retireAuthTokens(db: Db, userId: string, now: Date): Promise<void> {
  await db.execute(sql`UPDATE auth_tokens SET used_at = ${now} WHERE user_id = ${userId} AND used_at IS NULL`)
}

export async function findLiveAuthToken(db: Db, hash: string, now: Date): Promise<{ id: string; userId: string } | undefined> {
  const row = await db.one<{ id: string; user_id: string }>(sql`
    SELECT id, user_id FROM auth_tokens WHERE token_hash = ${hash} AND used_at IS NULL AND expires_at > ${now}`)
  return row && { id: row.id, userId: row.user_id }
}

/** Consumes a live token in one conditional update; the user id when it was live, else undefined. */
export async function consumeAuthToken(db: Db, hash: string, now: Date): Promise<string | undefined> {
  const token = await findLiveAuthToken(db, hash, now)
  if (!token) return undefined
  const result = await db.execute(sql`UPDATE auth_tokens SET used_at = ${now} WHERE id = ${token.id} AND used_at IS NULL`)
  return result.affectedRows === 1 ? token.userId : undefined
}
