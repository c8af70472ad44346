import { describe, expect, test } from 'bun:test'
import { availableParallelism } from 'node:os'
import { jwtVerify, SignJWT } from 'jose'
import { bearer, createAdmin, login } from '../../../test/factories.ts'
import { startApp } from '../../../test/harness.ts'
import { photo } from '../../../test/images.ts'
import { sharp } from '../../lib/sharp.ts'
import { accessTokens } from './tokens.ts'

const SECRET = 'a test secret that is long enough for HS256 keys'
const NOW = new Date('2026-06-01T09:00:00.000Z')
const SECONDS = NOW.getTime() / 1000
const CLAIMS = { userId: '01J0000000000000000000USER', role: 'admin' as const, familyId: '01J00000000000000000FAMILY' }
const tokens = accessTokens(SECRET, 900)
const key = new TextEncoder().encode(SECRET)
const base = { role: 'admin', fam: CLAIMS.familyId, sub: CLAIMS.userId, iss: 'spaces-api', aud: 'spaces-admin', iat: SECONDS, exp: SECONDS + 900 }
/** A token made by jose, an independent implementation, from `payload` and `header`. */
const joseToken = (payload: Record<string, unknown> = base, header: Record<string, unknown> = { alg: 'HS256', typ: 'at+jwt' }, secret = key) =>
  new SignJWT(payload).setProtectedHeader(header as { alg: string }).sign(secret, { crit: { ext: true } })
const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

describe('access tokens against jose', () => {
  test('jose accepts what we sign, with the claims we put in', async () => {
    const { payload, protectedHeader } = await jwtVerify(tokens.sign(CLAIMS, NOW), key, {
      algorithms: ['HS256'],
      issuer: 'spaces-api',
      audience: 'spaces-admin',
      typ: 'at+jwt',
      currentDate: NOW,
    })
    expect(protectedHeader).toEqual({ alg: 'HS256', typ: 'at+jwt' })
    expect(payload).toEqual(base)
  })

  test('we accept what jose signs, an audience list included', async () => {
    expect(tokens.verify(await joseToken(), NOW)).toEqual(CLAIMS)
    expect(tokens.verify(await joseToken({ ...base, aud: ['other', 'spaces-admin'] }), NOW)).toEqual(CLAIMS)
    expect(tokens.verify(await joseToken({ ...base, role: 'superadmin', nbf: SECONDS }), NOW)).toEqual({ ...CLAIMS, role: 'superadmin' })
  })

  test('a token lives until the second before exp', () => {
    const token = tokens.sign(CLAIMS, NOW)
    expect(tokens.verify(token, new Date(NOW.getTime() + 899_999))).toEqual(CLAIMS)
    expect(tokens.verify(token, new Date(NOW.getTime() + 900_000))).toBeUndefined()
  })

  test('every flawed token is refused, while the same token without the flaw passes', async () => {
    const good = tokens.sign(CLAIMS, NOW)
    const [h, p, s] = good.split('.') as [string, string, string]
    const flawed: Record<string, string | Promise<string>> = {
      'empty': '',
      'two segments': `${h}.${p}`,
      'four segments': `${good}.${s}`,
      'empty signature': `${h}.${p}.`,
      'signature of another payload': `${h}.${segment({ ...base, role: 'superadmin' })}.${s}`,
      'signature cut short': `${h}.${p}.${s.slice(0, -2)}`,
      'characters outside base64url': `${h}.${p}.${s.slice(0, -1)}+`,
      'alg none': `${segment({ alg: 'none', typ: 'at+jwt' })}.${p}.`,
      'another secret': joseToken(base, undefined, new TextEncoder().encode('another secret, just as long as the first')),
      'HS512': joseToken(base, { alg: 'HS512', typ: 'at+jwt' }),
      'typ JWT': joseToken(base, { alg: 'HS256', typ: 'JWT' }),
      'no typ': joseToken(base, { alg: 'HS256' }),
      'a crit header': joseToken(base, { alg: 'HS256', typ: 'at+jwt', crit: ['ext'], ext: 1 }),
      'no exp': joseToken({ ...base, exp: undefined }),
      'exp as text': joseToken({ ...base, exp: String(SECONDS + 900) }),
      'expired': joseToken({ ...base, exp: SECONDS }),
      'not yet valid': joseToken({ ...base, nbf: SECONDS + 1 }),
      'iat as text': joseToken({ ...base, iat: 'now' }),
      'another issuer': joseToken({ ...base, iss: 'someone-else' }),
      'another audience': joseToken({ ...base, aud: 'spaces-public' }),
      'no subject': joseToken({ ...base, sub: undefined }),
      'a numeric subject': joseToken({ ...base, sub: 42 }),
      'no family': joseToken({ ...base, fam: undefined }),
      'an unknown role': joseToken({ ...base, role: 'owner' }),
      'a payload that is not an object': `${h}.${segment([base])}.${s}`,
    }
    for (const [name, token] of Object.entries(flawed)) {
      const value = await token
      // jose builds the signature over the payload it was given, so only the named flaw is wrong.
      expect({ name, claims: tokens.verify(value, NOW) }).toEqual({ name, claims: undefined })
    }
    expect(tokens.verify(good, NOW)).toEqual(CLAIMS)
  })
})

describe('access tokens and the thread pool', () => {
  test('an admin request is answered while image encodes hold every thread of the runtime pool', async () => {
    const app = await startApp()
    try {
      const session = await login(app, (await createAdmin(app)).phone)
      const picture = await photo(1600, 1200)
      // One encode per pool thread (Bun's pool has a thread per core unless UV_THREADPOOL_SIZE says otherwise).
      const threads = Number(process.env.UV_THREADPOOL_SIZE) || availableParallelism()
      let finished = 0
      const encodes = Promise.all(Array.from({ length: threads }, () => sharp(picture).avif({ effort: 3 }).toBuffer().then(() => finished++)))
      await Bun.sleep(50)
      const res = await app.fetch('/admin/auth/me', { headers: bearer(session) })
      // Answered before any encode ended: checking the token did not queue for a pool thread (the
      // WebCrypto check it replaced waited for the first encode to free one).
      expect({ status: res.status, finished }).toEqual({ status: 200, finished: 0 })
      await encodes
    } finally {
      await app.destroy()
    }
  }, 60_000)
})
