import { errors, jwtVerify, SignJWT } from 'jose'
import type { Role } from '../users/model.ts'

/**
 * Access tokens (decision 25): HS256 JWTs typed `at+jwt`, with our own issuer and audience, carrying
 * the user id, role and refresh family. Verification pins the algorithm and demands `exp`, so
 * `alg: none`, other algorithms, tokens signed with another secret and tokens without expiry fail.
 */
const ISSUER = 'spaces-api'
const AUDIENCE = 'spaces-admin'
const TYP = 'at+jwt'

export interface AccessClaims {
  userId: string
  role: Role
  familyId: string
}

export function accessTokens(secret: string, ttlSec: number) {
  const key = new TextEncoder().encode(secret)
  return {
    sign(claims: AccessClaims, now: Date): Promise<string> {
      const iat = Math.floor(now.getTime() / 1000)
      return new SignJWT({ role: claims.role, fam: claims.familyId })
        .setProtectedHeader({ alg: 'HS256', typ: TYP })
        .setSubject(claims.userId)
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt(iat)
        .setExpirationTime(iat + ttlSec)
        .sign(key)
    },
    /** The claims of a valid token, or undefined for anything else. */
    async verify(token: string, now: Date): Promise<AccessClaims | undefined> {
      try {
        const { payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: ISSUER,
          audience: AUDIENCE,
          typ: TYP,
          requiredClaims: ['exp', 'sub', 'fam', 'role'],
          currentDate: now,
          clockTolerance: 0,
        })
        if (typeof payload.sub !== 'string' || typeof payload.fam !== 'string') return undefined
        if (payload.role !== 'admin' && payload.role !== 'superadmin') return undefined
        return { userId: payload.sub, role: payload.role, familyId: payload.fam }
      } catch (error) {
        if (error instanceof errors.JOSEError || error instanceof TypeError) return undefined
        throw error
      }
    },
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
