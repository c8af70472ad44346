import { realpath, stat } from 'node:fs/promises'
import { resolve, sep } from 'node:path'
import { Elysia } from 'elysia'
import type { Config } from '../../config.ts'
import { NotFound } from '../../http/errors.ts'

const TYPES: Record<string, string> = { avif: 'image/avif', webp: 'image/webp', jpg: 'image/jpeg' }
const IMMUTABLE = 'public, max-age=31536000, immutable'

/**
 * The file under `root` that a URL path below the asset prefix names, or undefined. Refuses encoded
 * separators, dot segments, NUL, anything but a derivative's extension, and any path that leaves
 * `root`, symlinks included (checked on the real path).
 */
export async function mediaFile(root: string, rawPath: string): Promise<{ path: string; type: string } | undefined> {
  if (/%2f|%5c|\\|%00/i.test(rawPath)) return undefined
  const segments: string[] = []
  for (const raw of rawPath.split('/')) {
    let segment: string
    try {
      segment = decodeURIComponent(raw)
    } catch {
      return undefined
    }
    if (segment === '' || segment === '.' || segment === '..' || segment.includes('\0') || segment.includes('/')) return undefined
    segments.push(segment)
  }
  const type = TYPES[segments.at(-1)?.split('.').pop()?.toLowerCase() ?? '']
  if (!type) return undefined
  const base = resolve(root)
  const path = resolve(base, ...segments)
  if (!path.startsWith(base + sep)) return undefined
  const [realBase, realFile] = await Promise.all([realpath(base).catch(() => undefined), realpath(path).catch(() => undefined)])
  if (!realBase || !realFile || !realFile.startsWith(realBase + sep)) return undefined
  const info = await stat(realFile).catch(() => undefined)
  return info?.isFile() ? { path: realFile, type } : undefined
}

/**
 * `SERVE_MEDIA=true`: `MEDIA_ROOT` at the path of `ASSET_BASE_URL`, for development and small
 * installs. Production puts nginx there (README); the headers are the same.
 */
export function mediaFiles(config: Pick<Config, 'media'>) {
  const prefix = new URL(config.media.assetBaseUrl).pathname.replace(/\/+$/, '')
  return new Elysia({ name: 'feature.media.files' }).get(
    `${prefix}/*`,
    async ({ request, set }) => {
      const rawPath = new URL(request.url).pathname.slice(prefix.length + 1)
      const file = await mediaFile(config.media.root, rawPath)
      if (!file) throw new NotFound('No such file')
      return new Response(Bun.file(file.path), {
        headers: {
          ...(set.headers as Record<string, string>),
          'content-type': file.type,
          'cache-control': IMMUTABLE,
          'cross-origin-resource-policy': 'cross-origin',
          'x-content-type-options': 'nosniff',
        },
      })
    },
    // Files at the asset base URL, not a route of the API: the OpenAPI document leaves it out.
    { detail: { hide: true } },
  )
}
