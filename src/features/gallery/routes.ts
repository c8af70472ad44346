import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { NotFound } from '../../http/errors.ts'
import { errors } from '../../http/schemas.ts'
import { PAGES, type Page } from '../media/model.ts'
import { listImages, pageUpdatedAt } from '../media/queries.ts'
import { presentVariants } from '../media/urls.ts'
import { GalleryParams, GalleryQuery, SpaceGallery, type GalleryImage } from './model.ts'

const CACHE_CONTROL = 'public, max-age=300, stale-while-revalidate=86400'
const EPOCH = '1970-01-01T00:00:00.000Z'

/** The public gallery: a database read only (at most two queries), no image or file work. */
export async function readGallery({ config, db }: Pick<Deps, 'config' | 'db'>, slug: Page, category?: string): Promise<SpaceGallery> {
  const rows = await listImages(db, { page: slug, category, visible: true, readyOnly: true })
  const images: GalleryImage[] = []
  let updatedAt = 0
  for (const { image, variants } of rows) {
    const shown = presentVariants(config.media.assetBaseUrl, variants)
    // A ready image always has its JPEG primary; one without could not be shown, so it is left out.
    if (!shown.src || !shown.largest) continue
    updatedAt = Math.max(updatedAt, image.updatedAt.getTime())
    images.push({
      id: image.id,
      alt: image.alt,
      ...(image.caption ? { caption: image.caption } : {}),
      order: image.position,
      width: shown.largest.width,
      height: shown.largest.height,
      src: shown.src,
      variants: shown.variants,
    })
  }
  // Decision 7: with no image, the latest change to any image of the page.
  const at = images.length > 0 ? new Date(updatedAt).toISOString() : ((await pageUpdatedAt(db, slug)) ?? EPOCH)
  return { slug, updatedAt: at, images }
}

function etagOf(body: string): string {
  return `"${new Bun.CryptoHasher('sha256').update(body).digest('base64url').slice(0, 32)}"`
}

function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false
  return ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

/**
 * Rendered galleries, by page and category filter. This process's own changes clear it at once
 * (`clear`, called by the media service); a change from elsewhere (`gc` or `reprocess` in another
 * process, a hand edit of the database) shows within `GALLERY_CACHE_MS`.
 */
export const GALLERY_CACHE_MS = 1000

export function createGalleryCache(deps: Pick<Deps, 'config' | 'db' | 'clock'>) {
  // One read per key at a time: requests arriving while it runs share it.
  const entries = new Map<string, { rendered: Promise<{ body: string; etag: string }>; expires: number }>()
  // Keys are bounded: a flood of made-up category filters is served, not stored.
  const MAX_ENTRIES = 32
  return {
    clear() {
      entries.clear()
    },
    get(slug: Page, category?: string): Promise<{ body: string; etag: string }> {
      const key = `${slug}|${category ?? ''}`
      const now = deps.clock.now().getTime()
      const hit = entries.get(key)
      if (hit && hit.expires > now) return hit.rendered
      const rendered = readGallery(deps, slug, category).then((gallery) => {
        const body = JSON.stringify(gallery)
        return { body, etag: etagOf(body) }
      })
      if (entries.size >= MAX_ENTRIES) {
        for (const [k, e] of entries) if (e.expires <= now) entries.delete(k)
      }
      // The plain galleries are always kept: made-up filters cannot push them out.
      if (entries.size < MAX_ENTRIES || entries.has(key) || category === undefined) {
        const entry = { rendered, expires: now + GALLERY_CACHE_MS }
        entries.set(key, entry)
        // A failed read is not kept.
        rendered.catch(() => entries.get(key) === entry && entries.delete(key))
      }
      return rendered
    },
  }
}

export type GalleryCache = ReturnType<typeof createGalleryCache>

export function galleryRoutes(cache: GalleryCache) {
  return new Elysia({ name: 'feature.gallery' }).get(
    '/spaces/:slug/gallery',
    async ({ params, query, request, set }) => {
      if (!(PAGES as string[]).includes(params.slug)) throw new NotFound('No such space')
      const { body, etag } = await cache.get(params.slug as Page, query.category)
      const headers = { ...(set.headers as Record<string, string>), 'cache-control': CACHE_CONTROL, etag }
      // Decision 9: a strong ETag over the exact bytes; a match is 304 with no body.
      if (matches(request.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers })
      return new Response(body, { headers: { ...headers, 'content-type': 'application/json; charset=utf-8' } })
    },
    { params: GalleryParams, query: GalleryQuery, response: { 200: SpaceGallery, 304: t.Void(), ...errors(400, 404) } },
  )
}
