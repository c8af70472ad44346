import { ulid } from 'ulid'
import type { Config } from '../config.ts'
import { createDb } from '../db/index.ts'
import { migrate } from '../db/migrate.ts'
import { anySuperadmin, findUserByEmail, findUserByPhone, insertUser } from '../features/users/queries.ts'
import { hashPassword, passwordProblem } from '../lib/passwords.ts'
import { normalizePhone } from '../lib/phone.ts'

/**
 * Creates the first superadmin from SEED_SUPERADMIN_* (never a built-in password). Does nothing,
 * successfully, once any superadmin exists, so it is safe to run on every deploy.
 */
export async function run(config: Config): Promise<number> {
  const { name, phone: rawPhone, email, password } = config.seed
  const problems: string[] = []
  if (!name?.trim()) problems.push('SEED_SUPERADMIN_NAME: is required')
  else if (name.trim().length > 120) problems.push('SEED_SUPERADMIN_NAME: must be at most 120 characters')
  const phone = rawPhone ? normalizePhone(rawPhone, config.auth.phoneDefaultCountry) : null
  if (!rawPhone) problems.push('SEED_SUPERADMIN_PHONE: is required')
  else if (!phone) problems.push('SEED_SUPERADMIN_PHONE: is not a valid phone number (use the international form, +...)')
  if (email && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) problems.push('SEED_SUPERADMIN_EMAIL: is not an e-mail address')
  if (!password) problems.push('SEED_SUPERADMIN_PASSWORD: is required')
  else {
    const problem = passwordProblem(password, { phone, email })
    if (problem) problems.push(`SEED_SUPERADMIN_PASSWORD: ${problem}`)
  }

  const db = createDb(config)
  try {
    await migrate(db)
    if (await anySuperadmin(db)) {
      console.log('seed: a superadmin exists already; nothing to do')
      return 0
    }
    if (problems.length > 0) {
      console.error(`spaces-api seed: cannot create the superadmin:\n${problems.map((p) => `  ${p}`).join('\n')}`)
      return 1
    }
    if (await findUserByPhone(db, phone!)) {
      console.error('spaces-api seed: an admin with that phone number exists already')
      return 1
    }
    if (email && (await findUserByEmail(db, email))) {
      console.error('spaces-api seed: an admin with that e-mail exists already')
      return 1
    }
    const now = new Date()
    await insertUser(db, {
      id: ulid(),
      name: name!.trim(),
      phone: phone!,
      email: email || null,
      role: 'superadmin',
      status: 'active',
      passwordHash: await hashPassword(password!),
      createdBy: null,
      createdAt: now,
      updatedAt: now,
    })
    console.log(`seed: created superadmin ${name!.trim()} (${phone})`)
    return 0
  } finally {
    await db.close()
  }
}
