import { resolve, relative, isAbsolute, sep } from 'node:path'
import { Type as T, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ValueErrorType } from '@sinclair/typebox/errors'
import ipaddr from 'ipaddr.js'
import { isSupportedCountry, type CountryCode } from 'libphonenumber-js'

/**
 * The one place that reads the environment. `loadConfig` checks every variable of api.md's and
 * operations.md's configuration tables at once and reports every problem, one line each; the result
 * is frozen. No secret has a fallback value here or anywhere else.
 */

const TURNSTILE_VERIFY_URL = 'https://challenges.cloudflare.com/turnstile/v0/siteverify'

const text = (description: string, options: object = {}) => T.String({ description, ...options })
const opt = <S extends TSchema>(schema: S) => T.Optional(schema)
const oneOf = (values: string[]) =>
  T.Union(
    values.map((v) => T.Literal(v)),
    { description: `must be one of ${values.join(', ')}` },
  )
const integer = (description: string) => text(description, { pattern: '^[0-9]{1,9}$' })
const duration = (description: string) => text(description, { pattern: '^[0-9]{1,9}[smhd]?$' })
const boolean = text('must be true or false', { pattern: '^(true|false|1|0)$' })

/** What the environment may hold; the shape checks. Cross-field rules follow in `loadConfig`. */
export const EnvSchema = T.Object({
  NODE_ENV: opt(oneOf(['production', 'development', 'test'])),
  PORT: opt(integer('must be a TCP port number from 1 to 65535')),
  LOG_LEVEL: opt(oneOf(['debug', 'info', 'warn', 'error'])),

  DB_DRIVER: opt(oneOf(['mysql', 'sqlite'])),
  DB_HOST: opt(text('must be a host name')),
  DB_PORT: opt(integer('must be a TCP port number from 1 to 65535')),
  DB_USER: opt(text('must be a user name')),
  DB_PASSWORD: opt(T.String()),
  DB_NAME: opt(text('must be a database name', { pattern: '^[A-Za-z0-9_$]{1,64}$' })),
  DB_POOL_MAX: opt(integer('must be a whole number from 1 to 100')),
  DB_PATH: opt(text('must be a file path')),

  PUBLIC_ORIGINS: text('must list the allowed site origins, comma-separated'),
  ADMIN_ORIGINS: text('must list the allowed admin portal origins, comma-separated'),
  ASSET_BASE_URL: text('must be the absolute http(s) URL prefix of every asset URL'),
  MEDIA_ROOT: text('must be the directory served for derivatives'),
  STORAGE_ROOT: text('must be the private directory for originals/ and tmp/'),
  SERVE_MEDIA: opt(boolean),

  JWT_ACCESS_SECRET: text('must be a random string of at least 32 characters', { minLength: 32 }),
  JWT_REFRESH_SECRET: text('must be a random string of at least 32 characters', { minLength: 32 }),
  ACCESS_TOKEN_TTL: opt(duration('must be seconds, or a number with s, m, h or d (e.g. 15m)')),
  REFRESH_TOKEN_TTL: opt(duration('must be seconds, or a number with s, m, h or d (e.g. 30d)')),
  ADMIN_PORTAL_URL: text('must be the absolute http(s) URL of the admin portal'),
  IP_HASH_SALT: text('must be a random string of at least 16 characters', { minLength: 16 }),
  TRUST_PROXY: opt(T.String()),
  PHONE_DEFAULT_COUNTRY: opt(text('must be an ISO 3166 alpha-2 region code', { pattern: '^[A-Z]{2}$' })),

  SMTP_HOST: opt(text('must be the SMTP server host')),
  SMTP_PORT: opt(integer('must be a TCP port number from 1 to 65535')),
  SMTP_USER: opt(T.String()),
  SMTP_PASSWORD: opt(T.String()),
  ENQUIRY_NOTIFY_TO: opt(text('must list e-mail addresses, comma-separated')),
  MAIL_FROM: opt(text('must be an e-mail address, optionally as "Name <address>"')),

  CAPTCHA_SECRET: opt(T.String()),
  CAPTCHA_VERIFY_URL: opt(text('must be an absolute http(s) URL')),

  GIT_SHA: opt(text('must be a build identifier of at most 64 characters', { maxLength: 64 })),

  SHUTDOWN_TIMEOUT: opt(duration('must be seconds, or a number with s or m (e.g. 60s)')),
  BODY_TIMEOUT: opt(duration('must be seconds, or a number with s or m (e.g. 120s)')),
  IDLE_TIMEOUT: opt(duration('must be seconds from 1 to 255')),

  SEED_SUPERADMIN_NAME: opt(T.String()),
  SEED_SUPERADMIN_PHONE: opt(T.String()),
  SEED_SUPERADMIN_EMAIL: opt(T.String()),
  SEED_SUPERADMIN_PASSWORD: opt(T.String()),
})

type Env = typeof EnvSchema.static

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.join('\n')}`)
  }
}

/** Variables where an empty value means something (an empty password); elsewhere empty means unset. */
const EMPTY_ALLOWED = new Set(['DB_PASSWORD', 'SMTP_USER', 'SMTP_PASSWORD'])

export function loadConfig(source: Record<string, string | undefined>, buildSha = 'dev') {
  const raw: Record<string, string> = {}
  for (const key of Object.keys(EnvSchema.properties)) {
    const value = source[key]
    if (value === undefined) continue
    if (value.trim() === '' && !EMPTY_ALLOWED.has(key)) continue
    raw[key] = EMPTY_ALLOWED.has(key) ? value : value.trim()
  }

  const problems: string[] = []
  const seen = new Set<string>()
  for (const error of Value.Errors(EnvSchema, raw)) {
    const key = error.path.slice(1)
    if (seen.has(key)) continue
    seen.add(key)
    const description = (error.schema as { description?: string }).description
    problems.push(
      error.type === ValueErrorType.ObjectRequiredProperty
        ? `${key}: is required (${(EnvSchema.properties as Record<string, TSchema>)[key]?.description ?? 'see README'})`
        : `${key}: ${description ?? error.message}`,
    )
  }
  const env = raw as Env
  const problem = (key: string, message: string) => {
    if (!seen.has(key)) problems.push(`${key}: ${message}`)
    seen.add(key)
  }

  const nodeEnv = env.NODE_ENV ?? 'development'
  const isProduction = nodeEnv === 'production'
  const port = (key: string, value: string | undefined) => {
    if (value === undefined) return undefined
    const n = Number(value)
    if (!Number.isInteger(n) || n < 1 || n > 65535) problem(key, 'must be a TCP port number from 1 to 65535')
    return n
  }

  // Database
  const driver = env.DB_DRIVER ?? 'mysql'
  if (driver === 'mysql') {
    for (const key of ['DB_HOST', 'DB_PORT', 'DB_USER', 'DB_NAME'] as const) {
      if (env[key] === undefined) problem(key, 'is required when DB_DRIVER is mysql')
    }
    if (env.DB_PASSWORD === undefined) problem('DB_PASSWORD', 'is required when DB_DRIVER is mysql (it may be empty)')
  }
  const poolMax = env.DB_POOL_MAX === undefined ? 5 : Number(env.DB_POOL_MAX)
  if (poolMax < 1 || poolMax > 100) problem('DB_POOL_MAX', 'must be a whole number from 1 to 100')
  const db =
    driver === 'sqlite'
      ? ({ driver: 'sqlite', path: env.DB_PATH === ':memory:' ? ':memory:' : resolve(env.DB_PATH ?? './data/spaces.db') } as const)
      : ({
          driver: 'mysql',
          host: env.DB_HOST ?? '',
          port: port('DB_PORT', env.DB_PORT) ?? 3306,
          user: env.DB_USER ?? '',
          password: env.DB_PASSWORD ?? '',
          name: env.DB_NAME ?? '',
          poolMax,
        } as const)

  // Origins, URLs and directories
  const publicOrigins = originList('PUBLIC_ORIGINS', env.PUBLIC_ORIGINS, problem)
  const adminOrigins = originList('ADMIN_ORIGINS', env.ADMIN_ORIGINS, problem)
  const assetBaseUrl = httpUrl('ASSET_BASE_URL', env.ASSET_BASE_URL, problem)
  const adminPortalUrl = httpUrl('ADMIN_PORTAL_URL', env.ADMIN_PORTAL_URL, problem)
  const mediaRoot = resolve(env.MEDIA_ROOT ?? '.')
  const storageRoot = resolve(env.STORAGE_ROOT ?? '.')
  if (env.MEDIA_ROOT && env.STORAGE_ROOT && (contains(mediaRoot, storageRoot) || contains(storageRoot, mediaRoot))) {
    problem('STORAGE_ROOT', 'must not be inside MEDIA_ROOT or contain it (originals must never be served)')
  }

  // Secrets
  if (env.JWT_ACCESS_SECRET && env.JWT_ACCESS_SECRET === env.JWT_REFRESH_SECRET) {
    problem('JWT_REFRESH_SECRET', 'must differ from JWT_ACCESS_SECRET')
  }
  const accessTtlSec = seconds('ACCESS_TOKEN_TTL', env.ACCESS_TOKEN_TTL, 15 * 60, problem)
  const refreshTtlSec = seconds('REFRESH_TOKEN_TTL', env.REFRESH_TOKEN_TTL, 30 * 86400, problem)
  const server = {
    shutdownTimeoutSec: seconds('SHUTDOWN_TIMEOUT', env.SHUTDOWN_TIMEOUT, 60, problem),
    // 25 MB in 300 s needs about 0.7 Mbit/s: a slow uplink, not a trickling client.
    bodyTimeoutSec: seconds('BODY_TIMEOUT', env.BODY_TIMEOUT, 300, problem),
    idleTimeoutSec: seconds('IDLE_TIMEOUT', env.IDLE_TIMEOUT, 30, problem),
  }
  // Bun's idle timeout is at most 255 s; a timer longer than 2^31 ms (24.8 days) would fire at once.
  if (server.idleTimeoutSec > 255) problem('IDLE_TIMEOUT', 'must be seconds from 1 to 255')
  if (server.shutdownTimeoutSec > 86400) problem('SHUTDOWN_TIMEOUT', 'must be at most one day')
  if (server.bodyTimeoutSec > 86400) problem('BODY_TIMEOUT', 'must be at most one day')

  const trustProxy = (env.TRUST_PROXY ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  for (const entry of trustProxy) {
    if (!isIpOrCidr(entry)) problem('TRUST_PROXY', `"${entry}" is not an IP address or CIDR range`)
  }
  const country = env.PHONE_DEFAULT_COUNTRY
  if (country && !isSupportedCountry(country)) problem('PHONE_DEFAULT_COUNTRY', `"${country}" is not a supported region`)

  // Mail
  if (isProduction) {
    for (const key of ['SMTP_HOST', 'ENQUIRY_NOTIFY_TO', 'MAIL_FROM'] as const) {
      if (env[key] === undefined) problem(key, 'is required when NODE_ENV is production')
    }
  }
  const notifyTo = (env.ENQUIRY_NOTIFY_TO ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  for (const address of notifyTo) {
    if (!isEmail(address)) problem('ENQUIRY_NOTIFY_TO', `"${address}" is not an e-mail address`)
  }
  if (env.MAIL_FROM && !isEmail(env.MAIL_FROM.match(/<([^>]+)>\s*$/)?.[1] ?? env.MAIL_FROM)) {
    problem('MAIL_FROM', 'must be an e-mail address, optionally as "Name <address>"')
  }
  const smtpPort = port('SMTP_PORT', env.SMTP_PORT) ?? 587
  const listenPort = port('PORT', env.PORT)

  const captchaVerifyUrl = env.CAPTCHA_VERIFY_URL
    ? httpUrl('CAPTCHA_VERIFY_URL', env.CAPTCHA_VERIFY_URL, problem)
    : TURNSTILE_VERIFY_URL

  if (problems.length > 0) throw new ConfigError(problems)

  const config = {
    env: nodeEnv,
    isProduction,
    port: listenPort,
    logLevel: (env.LOG_LEVEL ?? 'info') as 'debug' | 'info' | 'warn' | 'error',
    db,
    cors: { publicOrigins, adminOrigins },
    media: {
      assetBaseUrl,
      root: mediaRoot,
      storageRoot,
      serve: env.SERVE_MEDIA === undefined ? !isProduction : env.SERVE_MEDIA === 'true' || env.SERVE_MEDIA === '1',
    },
    auth: {
      accessSecret: env.JWT_ACCESS_SECRET,
      refreshSecret: env.JWT_REFRESH_SECRET,
      accessTtlSec,
      refreshTtlSec,
      adminPortalUrl,
      phoneDefaultCountry: country as CountryCode | undefined,
    },
    ipHashSalt: env.IP_HASH_SALT,
    trustProxy,
    mail: {
      // Without an SMTP server outside production, messages are written to the log instead.
      transport: env.SMTP_HOST ? ('smtp' as const) : ('log' as const),
      host: env.SMTP_HOST,
      port: smtpPort,
      user: env.SMTP_USER || undefined,
      password: env.SMTP_PASSWORD || undefined,
      from: env.MAIL_FROM ?? 'spaces-api <no-reply@localhost>',
      notifyTo,
    },
    captcha: { secret: env.CAPTCHA_SECRET, verifyUrl: captchaVerifyUrl },
    gitSha: env.GIT_SHA ?? buildSha,
    server,
    seed: {
      name: env.SEED_SUPERADMIN_NAME,
      phone: env.SEED_SUPERADMIN_PHONE,
      email: env.SEED_SUPERADMIN_EMAIL,
      password: env.SEED_SUPERADMIN_PASSWORD,
    },
  }
  return deepFreeze(config)
}

export type Config = ReturnType<typeof loadConfig>

type Problem = (key: string, message: string) => void

function originList(key: string, value: string | undefined, problem: Problem): string[] {
  if (value === undefined) return []
  const origins: string[] = []
  for (const entry of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (entry.includes('*')) {
      problem(key, 'must not contain a wildcard (*); list every allowed origin')
      continue
    }
    const origin = entry.replace(/\/$/, '')
    let url: URL | undefined
    try {
      url = new URL(origin)
    } catch {}
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== origin) {
      problem(key, `"${entry}" is not an origin (scheme://host[:port], nothing after it)`)
      continue
    }
    origins.push(origin)
  }
  if (origins.length === 0) problem(key, 'must list at least one origin')
  return origins
}

function httpUrl(key: string, value: string | undefined, problem: Problem): string {
  if (value === undefined) return ''
  try {
    const url = new URL(value)
    if (url.protocol === 'http:' || url.protocol === 'https:') return value.replace(/\/+$/, '')
  } catch {}
  problem(key, `"${value}" is not an absolute http(s) URL`)
  return ''
}

function seconds(key: string, value: string | undefined, fallback: number, problem: Problem): number {
  if (value === undefined) return fallback
  const match = /^([0-9]+)([smhd]?)$/.exec(value)
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[match?.[2] ?? ''] ?? 1
  const n = Number(match?.[1]) * unit
  if (!match || !(n > 0)) {
    problem(key, 'must be a positive duration: seconds, or a number with s, m, h or d')
    return fallback
  }
  return n
}

function isIpOrCidr(entry: string): boolean {
  // IPv4 only as a dotted quad: ipaddr.parse would read "10" as 0.0.0.10, hiding a typo for 10.0.0.0/8.
  if (entry.includes('/')) return ipaddr.IPv6.isValidCIDR(entry) || ipaddr.IPv4.isValidCIDRFourPartDecimal(entry)
  return ipaddr.IPv6.isValid(entry) || ipaddr.IPv4.isValidFourPartDecimal(entry)
}

function isEmail(value: string): boolean {
  return value.length <= 254 && /^[^\s@<>(),;:"[\]]+@[^\s@<>(),;:"[\]]+\.[^\s@<>(),;:"[\]]+$/.test(value)
}

function contains(parent: string, child: string): boolean {
  const rel = relative(parent, child)
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}
