import { describe, expect, test } from 'bun:test'
import { join, resolve } from 'node:path'
import { ConfigError, loadConfig } from '../src/config.ts'
import { baseEnv } from './harness.ts'

const DIR = '/tmp/spaces-config-test'

/** A complete, valid environment on the embedded database; `overrides` may unset a variable with undefined. */
function env(overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return { ...baseEnv(DIR), DB_DRIVER: 'sqlite', DB_PATH: join(DIR, 'test.db'), ...overrides }
}

const MYSQL = { DB_DRIVER: 'mysql', DB_HOST: 'db.internal', DB_PORT: '3306', DB_USER: 'spaces', DB_PASSWORD: '', DB_NAME: 'spaces' }
const PRODUCTION_MAIL = { SMTP_HOST: 'smtp.test', ENQUIRY_NOTIFY_TO: 'team@site.test', MAIL_FROM: 'Spaces <no-reply@site.test>' }

/** The problems `loadConfig` reports for this environment; fails the test when it loads. */
function problemsOf(source: Record<string, string | undefined>): string[] {
  try {
    loadConfig(source)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    const problems = (error as ConfigError).problems
    for (const problem of problems) expect(problem).toMatch(/^[A-Z_]+: \S/)
    return problems
  }
  throw new Error('the configuration loaded, but a refusal was expected')
}

/** The variable names that the problem lines start with. */
const namesOf = (problems: string[]) => problems.map((p) => p.slice(0, p.indexOf(':')))

/** Asserts that exactly one variable is refused and it is `name`; returns its problem line. */
function refusal(overrides: Record<string, string | undefined>, name: string): string {
  const problems = problemsOf(env(overrides))
  expect(namesOf(problems)).toEqual([name])
  return problems[0]!
}

describe('a valid environment', () => {
  test('loads with the origin lists split into arrays', () => {
    const config = loadConfig(env({ PUBLIC_ORIGINS: 'https://site.test, http://localhost:4321/', ADMIN_ORIGINS: 'https://admin.test' }))
    expect(config.cors.publicOrigins).toEqual(['https://site.test', 'http://localhost:4321'])
    expect(config.cors.adminOrigins).toEqual(['https://admin.test'])
  })

  test('defaults the token lifetimes to 900 and 2592000 seconds', () => {
    const config = loadConfig(env())
    expect(config.auth.accessTtlSec).toBe(900)
    expect(config.auth.refreshTtlSec).toBe(2592000)
  })

  test('reads durations with units and in plain seconds', () => {
    expect(loadConfig(env({ ACCESS_TOKEN_TTL: '15m', REFRESH_TOKEN_TTL: '30d' })).auth).toMatchObject({ accessTtlSec: 900, refreshTtlSec: 2592000 })
    expect(loadConfig(env({ ACCESS_TOKEN_TTL: '3600', REFRESH_TOKEN_TTL: '2h' })).auth).toMatchObject({ accessTtlSec: 3600, refreshTtlSec: 7200 })
  })

  test('serves media by default outside production', () => {
    expect(loadConfig(env({ NODE_ENV: 'development' })).media.serve).toBe(true)
    expect(loadConfig(env({ NODE_ENV: 'test' })).media.serve).toBe(true)
    expect(loadConfig(env({ NODE_ENV: undefined })).media.serve).toBe(true)
  })

  test('does not serve media by default in production', () => {
    const config = loadConfig(env({ NODE_ENV: 'production', ...PRODUCTION_MAIL }))
    expect(config.isProduction).toBe(true)
    expect(config.media.serve).toBe(false)
  })

  test('lets SERVE_MEDIA override the default either way', () => {
    expect(loadConfig(env({ NODE_ENV: 'production', ...PRODUCTION_MAIL, SERVE_MEDIA: 'true' })).media.serve).toBe(true)
    expect(loadConfig(env({ SERVE_MEDIA: '0' })).media.serve).toBe(false)
  })

  test('defaults the MySQL pool to 5 connections', () => {
    const config = loadConfig(env(MYSQL))
    expect(config.db).toMatchObject({ driver: 'mysql', host: 'db.internal', port: 3306, user: 'spaces', password: '', name: 'spaces', poolMax: 5 })
  })

  test('needs no DB_* network variables with the sqlite driver', () => {
    const config = loadConfig(env({ DB_HOST: undefined, DB_PORT: undefined, DB_USER: undefined, DB_PASSWORD: undefined, DB_NAME: undefined }))
    expect(config.db).toEqual({ driver: 'sqlite', path: join(DIR, 'test.db') })
  })

  test('resolves a relative sqlite DB_PATH and keeps :memory: as it is', () => {
    expect(loadConfig(env({ DB_PATH: 'data/x.db' })).db).toEqual({ driver: 'sqlite', path: resolve('data/x.db') })
    expect(loadConfig(env({ DB_PATH: ':memory:' })).db).toEqual({ driver: 'sqlite', path: ':memory:' })
  })

  test('strips the trailing slash from ASSET_BASE_URL', () => {
    expect(loadConfig(env({ ASSET_BASE_URL: 'https://cdn.test/media/' })).media.assetBaseUrl).toBe('https://cdn.test/media')
  })

  test('reads PORT as a number and leaves it undefined when unset', () => {
    expect(loadConfig(env({ PORT: '8080' })).port).toBe(8080)
    expect(loadConfig(env()).port).toBeUndefined()
  })

  test('splits TRUST_PROXY into a list of IPs and CIDR ranges', () => {
    expect(loadConfig(env({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1' })).trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1', '::1'])
    expect(loadConfig(env()).trustProxy).toEqual([])
  })

  test('treats an empty value as unset', () => {
    const config = loadConfig(env({ LOG_LEVEL: '', ACCESS_TOKEN_TTL: '  ' }))
    expect(config.logLevel).toBe('info')
    expect(config.auth.accessTtlSec).toBe(900)
  })

  test('takes GIT_SHA over the build identifier', () => {
    expect(loadConfig(env(), 'abc123').gitSha).toBe('abc123')
    expect(loadConfig(env({ GIT_SHA: 'deadbeef' }), 'abc123').gitSha).toBe('deadbeef')
  })

  test('returns a deeply frozen object', () => {
    const config = loadConfig(env())
    expect(Object.isFrozen(config)).toBe(true)
    expect(Object.isFrozen(config.auth)).toBe(true)
    expect(Object.isFrozen(config.cors.publicOrigins)).toBe(true)
    expect(() => {
      ;(config as { port: number | undefined }).port = 1
    }).toThrow(TypeError)
    expect(() => (config.cors.publicOrigins as string[]).push('https://evil.test')).toThrow(TypeError)
  })
})

describe('required variables', () => {
  const REQUIRED = [
    'PUBLIC_ORIGINS',
    'ADMIN_ORIGINS',
    'ASSET_BASE_URL',
    'MEDIA_ROOT',
    'STORAGE_ROOT',
    'JWT_ACCESS_SECRET',
    'JWT_REFRESH_SECRET',
    'ADMIN_PORTAL_URL',
    'IP_HASH_SALT',
  ]

  test('an empty environment reports every required variable in one error', () => {
    const names = namesOf(problemsOf({}))
    // MySQL is the default driver, so its variables are required too.
    expect(names.sort()).toEqual([...REQUIRED, 'DB_HOST', 'DB_PORT', 'DB_USER', 'DB_PASSWORD', 'DB_NAME'].sort())
  })

  test('an empty production environment also reports the mail variables', () => {
    const names = namesOf(problemsOf({ NODE_ENV: 'production' }))
    for (const name of [...REQUIRED, 'SMTP_HOST', 'ENQUIRY_NOTIFY_TO', 'MAIL_FROM']) expect(names).toContain(name)
  })

  for (const name of REQUIRED) {
    test(`a missing ${name} is refused`, () => {
      expect(refusal({ [name]: undefined }, name)).toStartWith(`${name}: is required`)
    })
  }

  test('a blank required variable counts as missing', () => {
    expect(refusal({ IP_HASH_SALT: '   ' }, 'IP_HASH_SALT')).toStartWith('IP_HASH_SALT: is required')
  })

  test('the MySQL driver requires DB_HOST, DB_PORT, DB_USER, DB_PASSWORD and DB_NAME', () => {
    const names = namesOf(problemsOf(env({ DB_DRIVER: 'mysql' })))
    expect(names.sort()).toEqual(['DB_HOST', 'DB_NAME', 'DB_PASSWORD', 'DB_PORT', 'DB_USER'])
  })

  test('the MySQL driver refuses a missing DB_HOST alone', () => {
    expect(refusal({ ...MYSQL, DB_HOST: undefined }, 'DB_HOST')).toContain('DB_DRIVER is mysql')
  })

  test('the MySQL driver accepts an empty DB_PASSWORD but not a missing one', () => {
    expect(loadConfig(env({ ...MYSQL, DB_PASSWORD: '' })).db).toMatchObject({ password: '' })
    refusal({ ...MYSQL, DB_PASSWORD: undefined }, 'DB_PASSWORD')
  })

  test('an unknown DB_DRIVER is refused', () => {
    refusal({ DB_DRIVER: 'postgres' }, 'DB_DRIVER')
  })

  for (const name of ['SMTP_HOST', 'ENQUIRY_NOTIFY_TO', 'MAIL_FROM']) {
    test(`production refuses a missing ${name}`, () => {
      expect(refusal({ NODE_ENV: 'production', ...PRODUCTION_MAIL, [name]: undefined }, name)).toContain('production')
    })
  }

  test('outside production the mail variables are optional and mail goes to the log', () => {
    const config = loadConfig(env({ NODE_ENV: 'development' }))
    expect(config.mail.transport).toBe('log')
    expect(config.mail.notifyTo).toEqual([])
  })
})

describe('secrets', () => {
  test('a JWT_ACCESS_SECRET under 32 characters is refused', () => {
    refusal({ JWT_ACCESS_SECRET: 'a'.repeat(31) }, 'JWT_ACCESS_SECRET')
  })

  test('a JWT_REFRESH_SECRET under 32 characters is refused', () => {
    refusal({ JWT_REFRESH_SECRET: 'b'.repeat(31) }, 'JWT_REFRESH_SECRET')
  })

  test('JWT secrets of exactly 32 characters are accepted', () => {
    expect(loadConfig(env({ JWT_ACCESS_SECRET: 'a'.repeat(32), JWT_REFRESH_SECRET: 'b'.repeat(32) })).auth.accessSecret).toBe('a'.repeat(32))
  })

  test('equal JWT secrets are refused', () => {
    const secret = 'x'.repeat(40)
    expect(refusal({ JWT_ACCESS_SECRET: secret, JWT_REFRESH_SECRET: secret }, 'JWT_REFRESH_SECRET')).toContain('differ')
  })

  test('an IP_HASH_SALT under 16 characters is refused', () => {
    refusal({ IP_HASH_SALT: 's'.repeat(15) }, 'IP_HASH_SALT')
  })

  test('a problem line never contains the secret value itself', () => {
    const access = 'hunter2-short-secret'
    const refresh = 'refresh-too-short'
    const salt = 'salt-short'
    const problems = problemsOf(env({ JWT_ACCESS_SECRET: access, JWT_REFRESH_SECRET: refresh, IP_HASH_SALT: salt }))
    expect(namesOf(problems).sort()).toEqual(['IP_HASH_SALT', 'JWT_ACCESS_SECRET', 'JWT_REFRESH_SECRET'])
    for (const problem of problems) {
      for (const secret of [access, refresh, salt]) expect(problem).not.toContain(secret)
    }
  })

  test('the error message never contains a secret value either', () => {
    const secret = 'y'.repeat(40)
    try {
      loadConfig(env({ JWT_ACCESS_SECRET: secret, JWT_REFRESH_SECRET: secret }))
      throw new Error('expected a refusal')
    } catch (error) {
      expect((error as Error).message).toContain('JWT_REFRESH_SECRET')
      expect((error as Error).message).not.toContain(secret)
    }
  })
})

describe('origin lists', () => {
  for (const name of ['PUBLIC_ORIGINS', 'ADMIN_ORIGINS']) {
    test(`${name} containing * is refused`, () => {
      expect(refusal({ [name]: 'https://site.test,*' }, name)).toContain('*')
    })

    test(`${name} containing a wildcard subdomain is refused`, () => {
      refusal({ [name]: 'https://*.site.test' }, name)
    })
  }

  test('an origin list containing null is refused', () => {
    expect(refusal({ PUBLIC_ORIGINS: 'https://site.test,null' }, 'PUBLIC_ORIGINS')).toContain('"null"')
  })

  test('an origin with a path is refused', () => {
    expect(refusal({ PUBLIC_ORIGINS: 'https://a.test/path' }, 'PUBLIC_ORIGINS')).toContain('https://a.test/path')
  })

  test('an origin with a scheme other than http(s) is refused', () => {
    expect(refusal({ ADMIN_ORIGINS: 'ftp://x' }, 'ADMIN_ORIGINS')).toContain('ftp://x')
  })

  test('an entry that is not a URL is refused', () => {
    expect(refusal({ PUBLIC_ORIGINS: 'not a url' }, 'PUBLIC_ORIGINS')).toContain('not a url')
  })

  test('a list with no origins in it is refused', () => {
    expect(refusal({ ADMIN_ORIGINS: ' , ,' }, 'ADMIN_ORIGINS')).toContain('at least one origin')
  })
})

describe('URLs and directories', () => {
  test('a relative ASSET_BASE_URL is refused', () => {
    refusal({ ASSET_BASE_URL: '/media' }, 'ASSET_BASE_URL')
  })

  test('an ADMIN_PORTAL_URL that is not http(s) is refused', () => {
    refusal({ ADMIN_PORTAL_URL: 'javascript:alert(1)' }, 'ADMIN_PORTAL_URL')
  })

  test('a CAPTCHA_VERIFY_URL that is not http(s) is refused', () => {
    refusal({ CAPTCHA_VERIFY_URL: 'ftp://captcha.test' }, 'CAPTCHA_VERIFY_URL')
  })

  test('STORAGE_ROOT inside MEDIA_ROOT is refused', () => {
    refusal({ MEDIA_ROOT: '/srv/media', STORAGE_ROOT: '/srv/media/private' }, 'STORAGE_ROOT')
  })

  test('STORAGE_ROOT equal to MEDIA_ROOT is refused', () => {
    refusal({ MEDIA_ROOT: '/srv/media', STORAGE_ROOT: '/srv/media/' }, 'STORAGE_ROOT')
  })

  test('STORAGE_ROOT containing MEDIA_ROOT is refused', () => {
    refusal({ MEDIA_ROOT: '/srv/data/media', STORAGE_ROOT: '/srv/data' }, 'STORAGE_ROOT')
  })

  test('STORAGE_ROOT in a directory whose name starts with two dots is still inside MEDIA_ROOT', () => {
    refusal({ MEDIA_ROOT: '/srv/media', STORAGE_ROOT: '/srv/media/..private' }, 'STORAGE_ROOT')
  })

  test('sibling MEDIA_ROOT and STORAGE_ROOT are accepted', () => {
    const config = loadConfig(env({ MEDIA_ROOT: '/srv/media', STORAGE_ROOT: '/srv/media-private' }))
    expect(config.media.root).toBe('/srv/media')
    expect(config.media.storageRoot).toBe('/srv/media-private')
  })
})

describe('numbers and durations', () => {
  for (const value of ['0', '70000', 'abc', '-1', '80.5']) {
    test(`PORT ${value} is refused`, () => {
      expect(refusal({ PORT: value }, 'PORT')).toContain('1 to 65535')
    })
  }

  for (const value of ['0', '65536', 'abc']) {
    test(`DB_PORT ${value} is refused`, () => {
      refusal({ ...MYSQL, DB_PORT: value }, 'DB_PORT')
    })
  }

  test('SMTP_PORT 0 is refused', () => {
    refusal({ SMTP_PORT: '0' }, 'SMTP_PORT')
  })

  for (const value of ['0', '101', 'ten']) {
    test(`DB_POOL_MAX ${value} is refused`, () => {
      expect(refusal({ ...MYSQL, DB_POOL_MAX: value }, 'DB_POOL_MAX')).toContain('1 to 100')
    })
  }

  test('DB_POOL_MAX 1 and 100 are accepted', () => {
    expect(loadConfig(env({ ...MYSQL, DB_POOL_MAX: '1' })).db).toMatchObject({ poolMax: 1 })
    expect(loadConfig(env({ ...MYSQL, DB_POOL_MAX: '100' })).db).toMatchObject({ poolMax: 100 })
  })

  for (const value of ['15x', '-5', '1.5h', 'm', '0', '0d', 'forever']) {
    test(`ACCESS_TOKEN_TTL ${value} is refused`, () => {
      refusal({ ACCESS_TOKEN_TTL: value }, 'ACCESS_TOKEN_TTL')
    })
  }

  test('a bad REFRESH_TOKEN_TTL is refused', () => {
    refusal({ REFRESH_TOKEN_TTL: '30 days' }, 'REFRESH_TOKEN_TTL')
  })

  test('the server timeouts default to 60 s, 300 s and 30 s and take durations', () => {
    expect(loadConfig(env({})).server).toEqual({ shutdownTimeoutSec: 60, bodyTimeoutSec: 300, idleTimeoutSec: 30 })
    expect(loadConfig(env({ SHUTDOWN_TIMEOUT: '2m', BODY_TIMEOUT: '30s', IDLE_TIMEOUT: '255' })).server).toEqual({
      shutdownTimeoutSec: 120,
      bodyTimeoutSec: 30,
      idleTimeoutSec: 255,
    })
  })

  for (const [key, value] of [['IDLE_TIMEOUT', '256'], ['IDLE_TIMEOUT', '0'], ['SHUTDOWN_TIMEOUT', 'soon'], ['BODY_TIMEOUT', '-1'], ['BODY_TIMEOUT', '30d'], ['SHUTDOWN_TIMEOUT', '25d']]) {
    test(`${key} ${value} is refused`, () => {
      refusal({ [key!]: value }, key!)
    })
  }
})

describe('enumerations and formats', () => {
  test('an unknown LOG_LEVEL is refused', () => {
    expect(refusal({ LOG_LEVEL: 'trace' }, 'LOG_LEVEL')).toContain('debug, info, warn, error')
  })

  test('an unknown NODE_ENV is refused', () => {
    refusal({ NODE_ENV: 'staging' }, 'NODE_ENV')
  })

  test('a SERVE_MEDIA that is not a boolean is refused', () => {
    refusal({ SERVE_MEDIA: 'yes' }, 'SERVE_MEDIA')
  })

  for (const value of ['proxy.internal', '10.0.0.0/33', '300.1.1.1', '10', '127.0.0.1,localhost']) {
    test(`a TRUST_PROXY entry "${value}" is refused`, () => {
      refusal({ TRUST_PROXY: value }, 'TRUST_PROXY')
    })
  }

  test('PHONE_DEFAULT_COUNTRY XX (not a region) is refused', () => {
    expect(refusal({ PHONE_DEFAULT_COUNTRY: 'XX' }, 'PHONE_DEFAULT_COUNTRY')).toContain('XX')
  })

  test('PHONE_DEFAULT_COUNTRY in lower case is refused', () => {
    refusal({ PHONE_DEFAULT_COUNTRY: 'gb' }, 'PHONE_DEFAULT_COUNTRY')
  })

  test('PHONE_DEFAULT_COUNTRY GB is accepted', () => {
    expect(loadConfig(env({ PHONE_DEFAULT_COUNTRY: 'GB' })).auth.phoneDefaultCountry).toBe('GB')
  })

  test('an ENQUIRY_NOTIFY_TO entry that is not an address is refused', () => {
    expect(refusal({ ENQUIRY_NOTIFY_TO: 'team@site.test, nobody' }, 'ENQUIRY_NOTIFY_TO')).toContain('"nobody"')
  })

  test('several ENQUIRY_NOTIFY_TO addresses are accepted', () => {
    expect(loadConfig(env({ ENQUIRY_NOTIFY_TO: 'a@site.test, b@site.test' })).mail.notifyTo).toEqual(['a@site.test', 'b@site.test'])
  })

  for (const value of ['nobody', 'Name <nobody>', 'a b@site.test']) {
    test(`MAIL_FROM "${value}" is refused`, () => {
      refusal({ MAIL_FROM: value }, 'MAIL_FROM')
    })
  }

  test('MAIL_FROM as a bare address or as "Name <address>" is accepted', () => {
    expect(loadConfig(env({ MAIL_FROM: 'no-reply@site.test' })).mail.from).toBe('no-reply@site.test')
    expect(loadConfig(env({ MAIL_FROM: 'Spaces <no-reply@site.test>' })).mail.from).toBe('Spaces <no-reply@site.test>')
  })

  test('a GIT_SHA over 64 characters is refused', () => {
    refusal({ GIT_SHA: 'f'.repeat(65) }, 'GIT_SHA')
  })
})

describe('reporting', () => {
  test('problems in several variables are all reported at once', () => {
    const names = namesOf(problemsOf(env({ PORT: '0', LOG_LEVEL: 'loud', PUBLIC_ORIGINS: '*', IP_HASH_SALT: 'short', TRUST_PROXY: 'nope' })))
    expect(names.sort()).toEqual(['IP_HASH_SALT', 'LOG_LEVEL', 'PORT', 'PUBLIC_ORIGINS', 'TRUST_PROXY'])
  })

  test('the error message lists every problem on its own line', () => {
    try {
      loadConfig(env({ PORT: 'abc', NODE_ENV: 'staging' }))
      throw new Error('expected a refusal')
    } catch (error) {
      const lines = (error as Error).message.split('\n')
      expect(lines[0]).toBe('invalid configuration:')
      expect(lines.slice(1).sort()).toEqual((error as ConfigError).problems.slice().sort())
      expect(lines).toHaveLength(3)
    }
  })
})
