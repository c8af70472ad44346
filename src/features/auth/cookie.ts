/** The refresh cookie: sent only to /admin/auth, readable by no script, usable cross-site (CHIPS). */
export const REFRESH_COOKIE = 'svc_admin_refresh'
const ATTRIBUTES = 'Path=/admin/auth; HttpOnly; Secure; SameSite=None; Partitioned'

export function refreshCookie(token: string, maxAgeSec: number): string {
  return `${REFRESH_COOKIE}=${token}; Max-Age=${maxAgeSec}; ${ATTRIBUTES}`
}

export function clearedRefreshCookie(): string {
  return `${REFRESH_COOKIE}=; Max-Age=0; ${ATTRIBUTES}`
}

export function readRefreshCookie(request: Request): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=')
    if (name === REFRESH_COOKIE) return value.join('=') || undefined
  }
  return undefined
}
