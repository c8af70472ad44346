import sql, { empty, join, type Sql } from 'sql-template-tag'
import type { Db } from '../../db/db.ts'
import { containsPattern, toDate, toDateOrNull, toIso, toIsoOrNull } from '../../db/db.ts'
import type { Admin, Role, Status, User } from './model.ts'

export interface UserRecord {
  id: string
  name: string
  phone: string
  email: string | null
  role: Role
  status: Status
  passwordHash: string | null
  failedLoginCount: number
  lockedUntil: Date | null
  lastLoginAt: Date | null
  createdBy: string | null
  createdAt: Date
  updatedAt: Date
}

const COLUMNS = sql`id, name, phone, email, role, status, password_hash, failed_login_count, locked_until,
  last_login_at, created_by, created_at, updated_at`

function toRecord(row: Record<string, unknown>): UserRecord {
  return {
    id: row.id as string,
    name: row.name as string,
    phone: row.phone as string,
    email: (row.email as string | null) ?? null,
    role: row.role as Role,
    status: row.status as Status,
    passwordHash: (row.password_hash as string | null) ?? null,
    failedLoginCount: Number(row.failed_login_count),
    lockedUntil: toDateOrNull(row.locked_until),
    lastLoginAt: toDateOrNull(row.last_login_at),
    createdBy: (row.created_by as string | null) ?? null,
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
  }
}

export function toAdmin(u: UserRecord): Admin {
  return { id: u.id, name: u.name, phone: u.phone, email: u.email, role: u.role, status: u.status }
}

export function toUser(u: UserRecord): User {
  return {
    ...toAdmin(u),
    hasPassword: u.passwordHash !== null,
    lastLoginAt: toIsoOrNull(u.lastLoginAt),
    createdBy: u.createdBy,
    createdAt: toIso(u.createdAt),
    updatedAt: toIso(u.updatedAt),
  }
}

export async function findUserById(db: Db, id: string): Promise<UserRecord | undefined> {
  const row = await db.one(sql`SELECT ${COLUMNS} FROM admin_users WHERE id = ${id}`)
  return row && toRecord(row)
}

export async function findUserByPhone(db: Db, phone: string): Promise<UserRecord | undefined> {
  const row = await db.one(sql`SELECT ${COLUMNS} FROM admin_users WHERE phone = ${phone}`)
  return row && toRecord(row)
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRecord | undefined> {
  const row = await db.one(sql`SELECT ${COLUMNS} FROM admin_users WHERE email = ${email}`)
  return row && toRecord(row)
}

export async function insertUser(db: Db, u: Omit<UserRecord, 'failedLoginCount' | 'lockedUntil' | 'lastLoginAt'>): Promise<void> {
  await db.execute(sql`
    INSERT INTO admin_users (id, name, phone, email, role, status, password_hash, failed_login_count, created_by, created_at, updated_at)
    VALUES (${u.id}, ${u.name}, ${u.phone}, ${u.email}, ${u.role}, ${u.status}, ${u.passwordHash}, ${0}, ${u.createdBy},
            ${u.createdAt}, ${u.updatedAt})`)
}

export type UserChanges = Partial<Pick<UserRecord, 'name' | 'phone' | 'email' | 'role' | 'status'>>

export async function updateUser(db: Db, id: string, changes: UserChanges, now: Date): Promise<void> {
  const columns: Record<keyof UserChanges, Sql> = {
    name: sql`name`,
    phone: sql`phone`,
    email: sql`email`,
    role: sql`role`,
    status: sql`status`,
  }
  const sets = (Object.keys(changes) as (keyof UserChanges)[])
    .filter((key) => changes[key] !== undefined)
    .map((key) => sql`${columns[key]} = ${changes[key]}`)
  await db.execute(sql`UPDATE admin_users SET ${join([...sets, sql`updated_at = ${now}`], ', ')} WHERE id = ${id}`)
}

export async function setPasswordHash(db: Db, id: string, hash: string, now: Date): Promise<void> {
  await db.execute(sql`
    UPDATE admin_users SET password_hash = ${hash}, failed_login_count = ${0}, locked_until = ${null}, updated_at = ${now}
    WHERE id = ${id}`)
}

/** Adds one failed login and returns the new count. */
export async function addLoginFailure(db: Db, id: string): Promise<number> {
  await db.execute(sql`UPDATE admin_users SET failed_login_count = failed_login_count + 1 WHERE id = ${id}`)
  const row = await db.one<{ n: number }>(sql`SELECT failed_login_count AS n FROM admin_users WHERE id = ${id}`)
  return Number(row?.n ?? 0)
}

export async function lockUser(db: Db, id: string, until: Date): Promise<void> {
  await db.execute(sql`UPDATE admin_users SET locked_until = ${until}, failed_login_count = ${0} WHERE id = ${id}`)
}

export async function recordLogin(db: Db, id: string, now: Date): Promise<void> {
  await db.execute(sql`
    UPDATE admin_users SET failed_login_count = ${0}, locked_until = ${null}, last_login_at = ${now} WHERE id = ${id}`)
}

/**
 * Counts the active superadmins, locking their rows until the transaction ends (MySQL; an SQLite
 * transaction is serial anyway), so two superadmins demoting each other cannot both pass the check.
 */
export async function lockActiveSuperadmins(tx: Db): Promise<number> {
  const rows =
    tx.dialect === 'mysql'
      ? await tx.query(sql`SELECT id FROM admin_users WHERE role = 'superadmin' AND status = 'active' FOR UPDATE`)
      : await tx.query(sql`SELECT id FROM admin_users WHERE role = 'superadmin' AND status = 'active'`)
  return rows.length
}

export async function anySuperadmin(db: Db): Promise<boolean> {
  return (await db.one(sql`SELECT id FROM admin_users WHERE role = 'superadmin' LIMIT 1`)) !== undefined
}

export interface UserFilter {
  q?: string
  status?: Status
  role?: Role
  page: number
  perPage: number
  sort: 'newest' | 'oldest' | 'name'
}

export async function listUsers(db: Db, f: UserFilter): Promise<{ users: UserRecord[]; total: number }> {
  const conditions: Sql[] = []
  if (f.status) conditions.push(sql`status = ${f.status}`)
  if (f.role) conditions.push(sql`role = ${f.role}`)
  if (f.q) {
    const like = containsPattern(f.q.toLowerCase())
    conditions.push(sql`(LOWER(name) LIKE ${like} ESCAPE '!' OR phone LIKE ${like} ESCAPE '!' OR LOWER(email) LIKE ${like} ESCAPE '!')`)
  }
  const where = conditions.length > 0 ? sql`WHERE ${join(conditions, ' AND ')}` : empty
  const order = {
    newest: sql`created_at DESC, id DESC`,
    oldest: sql`created_at ASC, id ASC`,
    // LOWER: SQLite compares names byte-wise (B before a), MySQL's collation ignores case.
    name: sql`LOWER(name) ASC, name ASC, id ASC`,
  }[f.sort]
  const rows = await db.query(sql`
    SELECT ${COLUMNS} FROM admin_users ${where} ORDER BY ${order}
    LIMIT ${f.perPage} OFFSET ${(f.page - 1) * f.perPage}`)
  const count = await db.one<{ n: number }>(sql`SELECT COUNT(*) AS n FROM admin_users ${where}`)
  return { users: rows.map(toRecord), total: Number(count?.n ?? 0) }
}
