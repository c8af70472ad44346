import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Role } from '../users/model.ts'

/**
 * Access tokens (decision 25): HS256 JWTs typed `at+jwt`, with our own issuer and audience, carrying
 * the user id, role and refresh family. Verification pins the algorithm and the type and demands
 * `exp`, so `alg: none`, other algorithms, tokens signed with another secret and tokens without
 * expiry fail.
 *
 * Signed and checked here, synchronously, with node:crypto's HMAC (P53): WebCrypto, which a JWT
 * library uses, runs on the runtime's thread pool, where every admin request then queued behind
 * the image encodes of an upload for up to seconds. The tests check these tokens against jose.
 */
const ISSUER = 'spaces-api'
const AUDIENCE = 'spaces-admin'
const HEADER = { alg: 'HS256', typ: 'at+jwt' } as const
const SEGMENT = /^[A-Za-z0-9_-]+$/

export interface AccessClaims {
  userId: string
  role: Role
  familyId: string
}

export function accessTokens(secret: string, ttlSec: number) {
  const key = Buffer.from(secret)
  const mac = (input: string) => createHmac('sha256', key).update(input).digest()
  const encodedHeader = encode(HEADER)

  return {
    sign(claims: AccessClaims, now: Date): string {
      const iat = Math.floor(now.getTime() / 1000)
      const payload = { role: claims.role, fam: claims.familyId, sub: claims.userId, iss: ISSUER, aud: AUDIENCE, iat, exp: iat + ttlSec }
      const input = `${encodedHeader}.${encode(payload)}`
      return `${input}.${mac(input).toString('base64url')}`
    },
    /** The claims of a valid token, or undefined for anything else. */
    verify(token: string, now: Date): AccessClaims | undefined {
      const parts = token.split('.')
      if (parts.length !== 3 || !parts.every((part) => SEGMENT.test(part))) return undefined
      const [h, p, s] = parts as [string, string, string]
      const expected = mac(`${h}.${p}`)
      const given = Buffer.from(s, 'base64url')
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
      const header = decode(h)
      if (!header || header.alg !== HEADER.alg || header.typ !== HEADER.typ || 'crit' in header || 'b64' in header) return undefined
      const claims = decode(p)
      if (!claims || claims.iss !== ISSUER) return undefined
      if (claims.aud !== AUDIENCE && !(Array.isArray(claims.aud) && claims.aud.includes(AUDIENCE))) return undefined
      const seconds = Math.floor(now.getTime() / 1000)
      if (typeof claims.exp !== 'number' || claims.exp <= seconds) return undefined
      if (claims.nbf !== undefined && (typeof claims.nbf !== 'number' || claims.nbf > seconds)) return undefined
      if (claims.iat !== undefined && typeof claims.iat !== 'number') return undefined
      if (typeof claims.sub !== 'string' || typeof claims.fam !== 'string') return undefined
      if (claims.role !== 'admin' && claims.role !== 'superadmin') return undefined
      return { userId: claims.sub, role: claims.role, familyId: claims.fam }
    },
  }
}

const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')

/** A base64url JSON object, or undefined for anything else. */
function decode(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** 32 random bytes, base64url: refresh, reset and invite tokens. */
export function randomToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
}

/** Tokens are stored only as this hash. */
export function tokenHash(token: string): string {
  return new Bun.CryptoHasher('sha256').update(token).digest('hex')
}
