import { dictionary } from '@zxcvbn-ts/language-common'
import { TooManyRequests } from '../http/errors.ts'

/**
 * Password policy and hashing (decision 16): 15 to 128 code points, never truncated, no composition
 * rules; refused when it is a common password or contains the user's phone digits or e-mail local
 * part. Hashes are argon2id through Bun.password, at most two at a time (one per core), with a
 * bounded queue so that a login flood cannot pile up memory.
 */
export const MIN_LENGTH = 15
export const MAX_LENGTH = 128

// 49,233 entries from zxcvbn-ts's maintained list.
const common = new Set((dictionary as unknown as Record<string, string[]>)['passwords-common']!.map((p) => p.toLowerCase()))

export function passwordProblem(password: string, user: { phone?: string | null; email?: string | null }): string | undefined {
  const length = [...password].length
  if (length < MIN_LENGTH) return `must be at least ${MIN_LENGTH} characters`
  if (length > MAX_LENGTH) return `must be at most ${MAX_LENGTH} characters`
  const lower = password.toLowerCase()
  if (common.has(lower)) return 'is too common; choose another'
  const digits = (user.phone ?? '').replace(/\D/g, '')
  // The national part alone is enough to give it away; compare the last 7+ digits too.
  const national = digits.slice(-Math.min(digits.length, 9))
  const passwordDigits = password.replace(/\D/g, '')
  if (digits.length >= 7 && (passwordDigits.includes(digits) || passwordDigits.includes(national))) {
    return 'must not contain your phone number'
  }
  const local = (user.email ?? '').split('@')[0]!.toLowerCase()
  if (local.length >= 3 && lower.includes(local)) return 'must not contain your e-mail name'
  return undefined
}

const MAX_IN_FLIGHT = 2
const MAX_WAITING = 64
let inFlight = 0
const waiting: (() => void)[] = []

async function bounded<T>(fn: () => Promise<T>): Promise<T> {
  if (inFlight >= MAX_IN_FLIGHT) {
    if (waiting.length >= MAX_WAITING) throw new TooManyRequests('Too many attempts; try again shortly', 1)
    await new Promise<void>((resolve) => waiting.push(resolve))
  }
  inFlight++
  try {
    return await fn()
  } finally {
    inFlight--
    waiting.shift()?.()
  }
}

export function hashPassword(password: string): Promise<string> {
  return bounded(() => Bun.password.hash(password, { algorithm: 'argon2id' }))
}

let dummy: Promise<string> | undefined

/**
 * Checks a password against a stored hash. Without a hash (no such user, or no password yet) it
 * checks against a dummy hash and fails, so both cases take the same time.
 */
export async function verifyPassword(password: string, hash: string | null | undefined): Promise<boolean> {
  dummy ??= Bun.password.hash(crypto.randomUUID(), { algorithm: 'argon2id' })
  const target = hash ?? (await dummy)
  const ok = await bounded(() => Bun.password.verify(password, target).catch(() => false))
  return ok && !!hash
}
