import ipaddr from 'ipaddr.js'

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number]

/**
 * The client address of decision 30: the socket peer, unless that peer is a trusted proxy; then the
 * right-most `X-Forwarded-For` entry that is not itself a trusted proxy. Entries left of the first
 * untrusted one are client-supplied and never believed.
 */
export function clientIpResolver(trusted: readonly string[]) {
  const ranges: Range[] = trusted.map((entry) => {
    const [addr, bits] = entry.includes('/') ? ipaddr.parseCIDR(entry) : [ipaddr.parse(entry), undefined]
    // Addresses are compared as IPv4 when IPv4-mapped (see `parse`), so a mapped entry must be too.
    if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && (bits === undefined || bits >= 96)) {
      return [(addr as ipaddr.IPv6).toIPv4Address(), bits === undefined ? 32 : bits - 96]
    }
    return [addr, bits ?? (addr.kind() === 'ipv4' ? 32 : 128)]
  })
  const isTrusted = (ip: string) => {
    const addr = parse(ip)
    return addr !== undefined && ranges.some(([range, bits]) => addr.kind() === range.kind() && addr.match(range, bits))
  }

  return (socketIp: string | undefined, forwardedFor: string | null): string => {
    const peer = normalise(socketIp ?? '') ?? 'unknown'
    if (ranges.length === 0 || !isTrusted(peer) || !forwardedFor) return peer
    const hops = forwardedFor
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = normalise(hops[i]!)
      if (!hop) return peer // a malformed entry ends the trusted chain
      if (!isTrusted(hop)) return hop
    }
    return normalise(hops[0] ?? '') ?? peer
  }
}

function parse(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  try {
    const addr = ipaddr.parse(ip)
    // ::ffff:10.0.0.1 is 10.0.0.1: compare and hash it as IPv4.
    return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? (addr as ipaddr.IPv6).toIPv4Address() : addr
  } catch {
    return undefined
  }
}

function normalise(ip: string): string | undefined {
  return parse(ip)?.toString()
}

/** SHA-256 hex of the IP plus the secret salt: the only form in which an address is ever stored. */
export function hashIp(ip: string, salt: string): string {
  return new Bun.CryptoHasher('sha256').update(ip).update(salt).digest('hex')
}
