import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { NotFound } from '../../http/errors.ts'
import { PAGES, type Page } from '../media/model.ts'
import { listImages, pageUpdatedAt } from '../media/queries.ts'
import { presentVariants } from '../media/urls.ts'
import { GalleryParams, GalleryQuery, SpaceGallery, type GalleryImage } from './model.ts'

const CACHE_CONTROL = 'public, max-age=300, stale-while-revalidate=86400'
const EPOCH = '1970-01-01T00:00:00.000Z'

/**
 * The public gallery: a database read only (at most two queries), no image or file work. No
 * response cache in the process: every change, including those of `gc` and `reprocess` run from
 * another process, shows on the next request; HTTP caches hold it for max-age (300 s) at most.
 */
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

export function galleryRoutes(deps: Pick<Deps, 'config' | 'db'>) {
  return new Elysia({ name: 'feature.gallery' }).get(
    '/spaces/:slug/gallery',
    async ({ params, query, request, set }) => {
      if (!(PAGES as string[]).includes(params.slug)) throw new NotFound('No such space')
      const body = JSON.stringify(await readGallery(deps, params.slug as Page, query.category))
      const etag = etagOf(body)
      const headers = { ...(set.headers as Record<string, string>), 'cache-control': CACHE_CONTROL, etag }
      // Decision 9: a strong ETag over the exact bytes; a match is 304 with no body.
      if (matches(request.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers })
      return new Response(body, { headers: { ...headers, 'content-type': 'application/json; charset=utf-8' } })
    },
    { params: GalleryParams, query: GalleryQuery, response: { 200: SpaceGallery } },
  )
}
