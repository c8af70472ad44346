import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createDeps } from '../src/app.ts'
import type { Deps } from '../src/deps.ts'
import { clientIpResolver, hashIp } from '../src/http/client-ip.ts'
import { startApp } from './harness.ts'

describe('clientIpResolver', () => {
  test('without trusted proxies the socket address is the client, whatever X-Forwarded-For says', () => {
    const resolve = clientIpResolver([])
    expect(resolve('203.0.113.7', '198.51.100.1')).toBe('203.0.113.7')
    expect(resolve('203.0.113.7', null)).toBe('203.0.113.7')
  })

  test('an untrusted peer is the client even when other proxies are trusted', () => {
    const resolve = clientIpResolver(['10.0.0.0/8'])
    expect(resolve('203.0.113.7', '198.51.100.1, 10.0.0.5')).toBe('203.0.113.7')
  })

  test('a trusted peer without X-Forwarded-For is the client', () => {
    const resolve = clientIpResolver(['127.0.0.1'])
    expect(resolve('127.0.0.1', null)).toBe('127.0.0.1')
    expect(resolve('127.0.0.1', '')).toBe('127.0.0.1')
  })

  test('behind a trusted peer the right-most X-Forwarded-For entry is the client', () => {
    const resolve = clientIpResolver(['127.0.0.1'])
    expect(resolve('127.0.0.1', '198.51.100.1')).toBe('198.51.100.1')
    expect(resolve('127.0.0.1', '192.0.2.9, 198.51.100.1')).toBe('198.51.100.1')
  })

  test('a chain of trusted proxies is skipped from the right', () => {
    const resolve = clientIpResolver(['10.0.0.0/8', '192.168.1.1'])
    expect(resolve('10.1.2.3', '198.51.100.1, 192.168.1.1, 10.9.9.9')).toBe('198.51.100.1')
  })

  test('entries the client put left of its own address are ignored', () => {
    const resolve = clientIpResolver(['10.0.0.0/8'])
    // The client sent "X-Forwarded-For: 1.1.1.1, 10.0.0.1"; the proxy appended the real peer.
    expect(resolve('10.0.0.2', '1.1.1.1, 10.0.0.1, 203.0.113.7')).toBe('203.0.113.7')
  })

  test('when every entry is a trusted proxy the left-most one is the client', () => {
    const resolve = clientIpResolver(['10.0.0.0/8'])
    expect(resolve('10.0.0.1', '10.0.0.3, 10.0.0.2')).toBe('10.0.0.3')
  })

  test('a malformed right-most entry ends the chain at the trusted peer', () => {
    const resolve = clientIpResolver(['127.0.0.1'])
    expect(resolve('127.0.0.1', '198.51.100.1, not-an-ip')).toBe('127.0.0.1')
    expect(resolve('127.0.0.1', '198.51.100.1, 1.2.3.4:5678')).toBe('127.0.0.1')
  })

  test('a malformed entry left of the client is never reached', () => {
    const resolve = clientIpResolver(['127.0.0.1'])
    expect(resolve('127.0.0.1', 'garbage, 198.51.100.1')).toBe('198.51.100.1')
  })

  test('empty entries and spaces in X-Forwarded-For are ignored', () => {
    const resolve = clientIpResolver(['127.0.0.1'])
    expect(resolve('127.0.0.1', ' 198.51.100.1 , ,')).toBe('198.51.100.1')
  })

  test('an IPv4-mapped socket address is matched and reported as IPv4', () => {
    const resolve = clientIpResolver(['127.0.0.1'])
    expect(resolve('::ffff:127.0.0.1', '198.51.100.1')).toBe('198.51.100.1')
    expect(clientIpResolver([])('::ffff:127.0.0.1', null)).toBe('127.0.0.1')
  })

  test('an IPv4-mapped entry in X-Forwarded-For is matched and reported as IPv4', () => {
    const resolve = clientIpResolver(['10.0.0.0/8'])
    expect(resolve('10.0.0.1', '::ffff:198.51.100.1, ::ffff:10.0.0.2')).toBe('198.51.100.1')
  })

  test('a trusted proxy written as an IPv4-mapped address matches its IPv4 peer', () => {
    expect(clientIpResolver(['::ffff:127.0.0.1'])('127.0.0.1', '198.51.100.1')).toBe('198.51.100.1')
    expect(clientIpResolver(['::ffff:10.0.0.0/104'])('::ffff:10.2.3.4', '198.51.100.1')).toBe('198.51.100.1')
  })

  test('IPv6 CIDR ranges are trusted', () => {
    const resolve = clientIpResolver(['fd00::/8'])
    expect(resolve('fd12:3456::1', '2001:db8::7, fd00::2')).toBe('2001:db8::7')
    expect(resolve('2001:db8::1', '2001:db8::7')).toBe('2001:db8::1')
  })

  test('an IPv4 range never matches an IPv6 address', () => {
    const resolve = clientIpResolver(['0.0.0.0/0'])
    expect(resolve('2001:db8::1', '198.51.100.1')).toBe('2001:db8::1')
  })

  test('addresses come back in one canonical spelling', () => {
    const resolve = clientIpResolver(['::1'])
    expect(resolve('0:0:0:0:0:0:0:1', '2001:DB8:0:0:0:0:0:7')).toBe('2001:db8::7')
  })

  test('an unknown socket address resolves to "unknown"', () => {
    expect(clientIpResolver([])(undefined, '198.51.100.1')).toBe('unknown')
  })
})

describe('hashIp', () => {
  test('is 64 lower-case hex characters', () => {
    expect(hashIp('198.51.100.1', 'a-salt-of-16-chars')).toMatch(/^[0-9a-f]{64}$/)
  })

  test('is SHA-256 of the address followed by the salt', () => {
    const expected = new Bun.CryptoHasher('sha256').update('198.51.100.1pepper-pepper-pepper').digest('hex')
    expect(hashIp('198.51.100.1', 'pepper-pepper-pepper')).toBe(expected)
  })

  test('depends on the salt', () => {
    expect(hashIp('198.51.100.1', 'salt-one-1234567')).not.toBe(hashIp('198.51.100.1', 'salt-two-1234567'))
  })

  test('depends on the address and is stable', () => {
    const salt = 'salt-one-1234567'
    expect(hashIp('198.51.100.1', salt)).toBe(hashIp('198.51.100.1', salt))
    expect(hashIp('198.51.100.1', salt)).not.toBe(hashIp('198.51.100.2', salt))
  })

  test('does not contain the raw address', () => {
    const hash = hashIp('198.51.100.1', 'salt-one-1234567')
    expect(hash).not.toContain('198.51.100.1')
    expect(hash).not.toContain('198')
  })
})

describe('createDeps(config, db).clientIp of an app started with TRUST_PROXY=127.0.0.1', () => {
  let app: Awaited<ReturnType<typeof startApp>>
  let deps: Deps
  const request = () => new Request(`${app.url}/health`, { headers: { 'x-forwarded-for': '192.0.2.1, 198.51.100.23' } })
  const peer = (address: string) => ({ requestIP: () => ({ address }) })

  beforeAll(async () => {
    app = await startApp({ env: { TRUST_PROXY: '127.0.0.1' } })
    deps = createDeps(app.config, app.db)
  })
  afterAll(async () => {
    await app.destroy()
  })

  test('the app starts and answers with the proxy trusted', async () => {
    expect(app.config.trustProxy).toEqual(['127.0.0.1'])
    expect((await app.fetch('/health', { headers: { 'x-forwarded-for': '198.51.100.23' } })).status).toBe(200)
  })

  test('a request from the loopback proxy resolves to the right-most X-Forwarded-For entry', () => {
    expect(deps.clientIp(request(), peer('127.0.0.1'))).toBe('198.51.100.23')
  })

  test('a request from the loopback proxy on a dual-stack socket resolves the same way', () => {
    expect(deps.clientIp(request(), peer('::ffff:127.0.0.1'))).toBe('198.51.100.23')
  })

  test('a request from any other peer resolves to that peer', () => {
    expect(deps.clientIp(request(), peer('203.0.113.7'))).toBe('203.0.113.7')
  })

  test('a request without a server resolves to "unknown"', () => {
    expect(deps.clientIp(request(), null)).toBe('unknown')
  })
})
