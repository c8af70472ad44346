/**
 * The fuzz suite's fixtures and bookkeeping (test/fuzz.test.ts): the admins whose tokens it uses,
 * forged tokens, the users, enquiries and images its requests work on, the e-mails the app sends
 * (for their reset links), live and rotated refresh tokens, and the `World` its `Lazy` values read.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { decodeJwt, SignJWT } from 'jose'
import sql from 'sql-template-tag'
import { ulid } from 'ulid'
import { tokenHash } from '../../src/features/auth/tokens.ts'
import type { Page } from '../../src/features/media/model.ts'
import { lockPageImageIds } from '../../src/features/media/queries.ts'
import { findUserByEmail, insertUser } from '../../src/features/users/queries.ts'
import type { Mail, Mailer } from '../../src/lib/mailer.ts'
import { hashPassword } from '../../src/lib/passwords.ts'
import { createEnquiry } from '../factories.ts'
import type { TestApp } from '../harness.ts'
import * as images from '../images.ts'
import type { AuthKind, World } from './arbitraries.ts'
import { BAD_FILES, GOOD_FILES, PASSWORD } from './routes.ts'

/** Written beside MEDIA_ROOT, where a path traversal would find it; no response may carry it. */
export const SECRET = 'FUZZ-SECRET-7f3a9c'

interface Holder {
  id: string
  accessToken: string
}

export type FuzzWorld = ReturnType<typeof createFuzzWorld>

export function createFuzzWorld() {
  let app: TestApp
  const mails: Mail[] = []
  const mailedTokens: string[] = []
  const refresh = { live: [] as string[], used: [] as string[] }
  const etags: string[] = []
  const files: Record<string, Uint8Array> = {}
  /** The admins whose tokens the fuzzer uses; never the target of a route that could end their sessions. */
  let holders: Record<'superadmin' | 'admin', Holder> | undefined
  const holderIds = new Set<string>()
  const loginPhones: string[] = []
  let userCount = 0
  let badTokens: Partial<Record<AuthKind, string>> = {}
  let sessionsLost = 0

  const mailer: Mailer = {
    async send(mail) {
      mails.push(mail)
      const token = /token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
      if (token) mailedTokens.push(token)
    },
    close() {},
  }

  async function addUser(role: 'superadmin' | 'admin', options: { email?: string | null; password?: string | null; status?: 'active' | 'inactive' } = {}) {
    const id = ulid()
    const now = new Date()
    // 0117 496 0xxx: a block the generated phones never use.
    const phone = `+441174960${String(userCount++).padStart(3, '0')}`
    await insertUser(app.db, {
      id,
      name: `Fixture ${role} ${userCount}`,
      phone,
      email: options.email ?? null,
      role,
      status: options.status ?? 'active',
      passwordHash: options.password === null ? null : await hashPassword(options.password ?? PASSWORD),
      createdBy: null,
      createdAt: now,
      updatedAt: now,
    })
    return { id, phone }
  }

  async function login(phone: string): Promise<Response> {
    const res = await app.fetch('/admin/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': `198.18.${userCount % 250}.${(userCount * 7) % 250}` },
      body: JSON.stringify({ phone, password: PASSWORD }),
    })
    if (res.status !== 200) throw new Error(`fixture login failed: ${res.status} ${await res.text()}`)
    return res
  }

  /** Tokens that are wrong in each of the ways decision 25 lists, and a few more. */
  async function forgeTokens(holder: Holder): Promise<Partial<Record<AuthKind, string>>> {
    const { fam } = decodeJwt(holder.accessToken) as { fam: string }
    const now = Math.floor(Date.now() / 1000)
    const sign = (claims: { sub?: string; role?: string; exp?: number | null }, secret = app.config.auth.accessSecret!, alg = 'HS256') => {
      const jwt = new SignJWT({ role: claims.role ?? 'admin', fam })
        .setProtectedHeader({ alg, typ: 'at+jwt' })
        .setSubject(claims.sub ?? holder.id)
        .setIssuer('spaces-api')
        .setAudience('spaces-admin')
        .setIssuedAt(now - 60)
      if (claims.exp !== null) jwt.setExpirationTime(claims.exp ?? now + 600)
      return jwt.sign(new TextEncoder().encode(secret))
    }
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
    const [head, payload, signature] = holder.accessToken.split('.') as [string, string, string]
    const flipped = signature.slice(0, 5) + (signature[5] === 'A' ? 'B' : 'A') + signature.slice(6)
    return {
      expired: `Bearer ${await sign({ exp: now - 30 })}`,
      'wrong-secret': `Bearer ${await sign({}, 'another-secret-of-at-least-32-characters!')}`,
      'refresh-secret': `Bearer ${await sign({}, app.config.auth.refreshSecret!)}`,
      'alg-none': `Bearer ${b64({ alg: 'none', typ: 'at+jwt' })}.${b64({ sub: holder.id, role: 'superadmin', fam, iss: 'spaces-api', aud: 'spaces-admin', exp: now + 600 })}.`,
      'no-exp': `Bearer ${await sign({ exp: null })}`,
      hs512: `Bearer ${await sign({}, app.config.auth.accessSecret!, 'HS512')}`,
      'unknown-user': `Bearer ${await sign({ sub: ulid() })}`,
      'escalated-role': `Bearer ${await sign({ role: 'superadmin' })}`,
      tampered: `Bearer ${head}.${payload}.${flipped}`,
      'lowercase-scheme': `bearer ${holder.accessToken}`,
      basic: 'Basic YWRtaW46YWRtaW4=',
      'empty-bearer': 'Bearer ',
      garbage: "Bearer ' OR 1=1 --",
      huge: `Bearer ${'a'.repeat(6000)}`,
    }
  }

  const issuedToken = (res: Response) => /svc_admin_refresh=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1]

  return {
    mailer,
    mails,
    get sessionsLost() {
      return sessionsLost
    },

    /** Token holders, made anew when there are none yet or a fuzzed request ended their sessions. */
    async ensureSessions() {
      if (holders) return
      const next = {} as Record<'superadmin' | 'admin', Holder>
      for (const role of ['superadmin', 'admin'] as const) {
        const { id, phone } = await addUser(role)
        holderIds.add(id)
        loginPhones.push(phone)
        next[role] = { id, accessToken: ((await (await login(phone)).json()) as { accessToken: string }).accessToken }
      }
      holders = next
      badTokens = await forgeTokens(next.admin)
    },

    /** A valid fixture token was refused: counted, and new holders are made before the next request. */
    sessionLost() {
      sessionsLost++
      holders = undefined
    },

    /** Files, users, enquiries, images and traversal targets for the requests to work on. */
    async prepare(testApp: TestApp) {
      app = testApp
      await this.ensureSessions()
      for (const [name, make] of Object.entries({
        jpeg: () => images.jpeg(64, 48),
        png: () => images.png(48, 32),
        webp: () => images.webp(40, 30),
        gif: () => images.gif(16, 12),
        tiff: () => images.tiff(32, 24),
        avif: () => images.avif(32, 24),
        avifAsHeif: images.avifAsHeif,
        jpegWithPayload: images.jpegWithPayload,
        svg: images.svg,
        pdf: images.pdf,
        text: images.text,
        elf: images.elf,
        truncatedJpeg: images.truncatedJpeg,
        gifJpegPolyglot: images.gifJpegPolyglot,
        pngSvgPolyglot: images.pngSvgPolyglot,
        heic: images.heic,
        jpegHeader: async () => Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46]),
        pngHeader: async () => Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      })) {
        files[name] = new Uint8Array(await make())
      }
      if (![...GOOD_FILES, ...BAD_FILES].every((name) => files[name])) throw new Error('a fuzz file fixture is missing')

      // Users the user routes may change (never the holders), with the fixtures' password or none.
      const victim = await addUser('admin', { email: 'victim@spaces.test' })
      await addUser('admin', { email: 'invited@spaces.test', password: null })
      const second = await addUser('superadmin', { email: 'second.super@spaces.test' })
      await addUser('admin', { email: 'gone@spaces.test', status: 'inactive' })
      loginPhones.push(victim.phone, second.phone)
      // Sessions and mailed links for the refresh, logout and reset routes from the first run.
      for (let i = 0; i < 3; i++) refresh.live.push(issuedToken(await login(victim.phone)) ?? '')
      for (const email of ['victim@spaces.test', 'second.super@spaces.test']) {
        const sent = mails.length
        await app.fetch('/admin/auth/forgot-password', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) })
        while (mails.length === sent) await Bun.sleep(5)
      }
      for (const status of ['new', 'new', 'read', 'replied', 'spam', 'archived'] as const) await createEnquiry(app, { status })
      for (const [page, file] of [['genesis', 'jpeg'], ['genesis', 'png'], ['hive', 'webp'], ['hive', 'jpeg']] as const) {
        const form = new FormData()
        form.set('page', page)
        form.set('alt', `Fixture ${file}`)
        form.set('file', new File([files[file]!], `${file}.bin`))
        const res = await app.fetch('/admin/media', { method: 'POST', headers: { authorization: `Bearer ${holders!.admin.accessToken}` }, body: form })
        if (res.status !== 201) throw new Error(`fixture upload failed: ${res.status} ${await res.text()}`)
      }
      // What a path traversal would reach: files beside MEDIA_ROOT, and symlinks in it pointing out.
      writeFileSync(join(app.dir, 'secret.jpg'), SECRET)
      writeFileSync(join(app.dir, 'x.jpg'), SECRET)
      mkdirSync(join(app.config.media.root, 'genesis'), { recursive: true })
      symlinkSync(join(app.dir, 'secret.jpg'), join(app.config.media.root, 'genesis', 'link.jpg'))
      symlinkSync(app.dir, join(app.config.media.root, 'genesis', 'linkdir'))
    },

    /** What one request's `Lazy` values read: the database as it is now, and the fixtures. */
    read(): World {
      const memo = new Map<string, Promise<string[]>>()
      const column = (key: string, query: ReturnType<typeof sql>) => {
        if (!memo.has(key)) memo.set(key, app.db.query<{ v: string }>(query).then((rows) => rows.map((r) => String(r.v))))
        return memo.get(key)!
      }
      return {
        userIds: async () => (await column('users', sql`SELECT id AS v FROM admin_users ORDER BY id`)).filter((id) => !holderIds.has(id)),
        enquiryIds: () => column('enquiries', sql`SELECT id AS v FROM enquiries ORDER BY id`),
        imageIds: (live) =>
          live ? column('live images', sql`SELECT id AS v FROM media_images WHERE deleted_at IS NULL ORDER BY id`) : column('images', sql`SELECT id AS v FROM media_images ORDER BY id`),
        pageImageIds: (page) => lockPageImageIds(app.db, page as Page),
        variantPaths: () => column('variants', sql`SELECT path AS v FROM media_variants ORDER BY id`),
        phones: () => column('phones', sql`SELECT phone AS v FROM admin_users ORDER BY id`),
        emails: () => column('emails', sql`SELECT email AS v FROM admin_users WHERE email IS NOT NULL ORDER BY id`),
        // A link of a holder would end the fuzzer's own sessions when used.
        async resetTokens(live) {
          const rows = await app.db.query<{ h: string; u: string; used: unknown }>(sql`SELECT token_hash AS h, user_id AS u, used_at AS used FROM auth_tokens`)
          const owners = new Map(rows.filter((r) => !live || r.used === null).map((r) => [r.h, r.u]))
          return mailedTokens.filter((token) => {
            const owner = owners.get(tokenHash(token))
            return owner !== undefined && !holderIds.has(owner)
          })
        },
        loginPhones: () => loginPhones,
        refreshTokens: () => refresh,
        etags: () => etags,
        selfId: (role) => holders![role].id,
        authHeader: (kind) => (kind === 'superadmin' || kind === 'admin' ? `Bearer ${holders![kind].accessToken}` : kind === 'none' ? undefined : badTokens[kind]),
        file: (name) => {
          if (name === 'oversize') files.oversize ??= Buffer.concat([files.jpeg!, new Uint8Array(25 * 1024 * 1024 + 1)])
          return files[name]!
        },
      }
    },

    /** Keeps the pools current after an accepted request (sessions, ETags), and waits for late writes. */
    async observe(route: string, res: Response, headers: Record<string, string>, mailsBefore: number, body: string) {
      if (res.status !== 200) return
      const presented = /svc_admin_refresh=([^;]*)/.exec(headers.cookie ?? '')?.[1]
      const retire = (token: string | undefined) => {
        if (!token) return
        refresh.live = refresh.live.filter((t) => t !== token)
        refresh.used = [...refresh.used.slice(-30), token]
      }
      const issued = issuedToken(res)
      if ((route === 'POST /admin/auth/login' || route === 'POST /admin/auth/refresh') && issued) {
        if (route === 'POST /admin/auth/refresh') retire(presented)
        refresh.live = [...refresh.live.slice(-30), issued]
      }
      if (route === 'POST /admin/auth/logout') retire(presented)
      const etag = res.headers.get('etag')
      if (route === 'GET /spaces/:slug/gallery' && etag && !etags.includes(etag)) {
        etags.push(etag)
        if (etags.length > 10) etags.shift()
      }
      // forgot-password answers first and writes afterwards: that write must land before the next snapshot.
      if (route === 'POST /admin/auth/forgot-password') {
        const email = sentEmail(body, headers['content-type'] ?? '')
        const user = email ? await findUserByEmail(app.db, email.trim()) : undefined
        if (user?.status === 'active') {
          const until = Date.now() + 3000
          while (mails.length === mailsBefore && Date.now() < until) await Bun.sleep(5)
        } else await Bun.sleep(email ? 2 : 30)
      }
    },
  }
}

/** The e-mail a forgot-password body carried, when it can be read back. */
function sentEmail(body: string, type: string): string | undefined {
  try {
    const parsed = type.includes('urlencoded') ? Object.fromEntries(new URLSearchParams(body)) : JSON.parse(body)
    return typeof parsed?.email === 'string' ? parsed.email : undefined
  } catch {
    return undefined
  }
}
