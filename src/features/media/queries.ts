import sql, { bulk, empty, join, type Sql } from 'sql-template-tag'
import type { Db } from '../../db/db.ts'
import { toDate, toIso } from '../../db/db.ts'
import type { Page } from './model.ts'
import type { Format, Variant } from './pipeline.ts'

export type ImageStatus = 'processing' | 'ready' | 'failed'

export interface ImageRecord {
  id: string
  page: Page
  categoryId: number | null
  category: string | null
  alt: string
  caption: string | null
  position: number
  isVisible: boolean
  status: ImageStatus
  width: number
  height: number
  contentHash: string
  createdAt: Date
  updatedAt: Date
}

/** A variant row is what the pipeline wrote. */
export type VariantRecord = Variant

const IMAGE_COLUMNS = sql`i.id, i.page, i.category_id, c.slug AS category, i.alt, i.caption, i.position, i.is_visible, i.status,
  i.width, i.height, i.content_hash, i.created_at, i.updated_at`

function toImage(row: Record<string, unknown>): ImageRecord {
  return {
    id: row.id as string,
    page: row.page as Page,
    categoryId: row.category_id === null ? null : Number(row.category_id),
    category: (row.category as string | null) ?? null,
    alt: row.alt as string,
    caption: (row.caption as string | null) ?? null,
    position: Number(row.position),
    isVisible: Boolean(Number(row.is_visible)),
    status: row.status as ImageStatus,
    width: Number(row.width),
    height: Number(row.height),
    contentHash: row.content_hash as string,
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
  }
}

function toVariant(row: Record<string, unknown>): VariantRecord {
  return {
    format: row.format as Format,
    width: Number(row.width),
    height: Number(row.height),
    bytes: Number(row.bytes),
    path: row.path as string,
    isPrimary: Boolean(Number(row.is_primary)),
  }
}

export async function listCategories(db: Db): Promise<{ id: number; slug: string; label: string }[]> {
  const rows = await db.query(sql`SELECT id, slug, label FROM media_categories ORDER BY position, id`)
  return rows.map((r) => ({ id: Number(r.id), slug: r.slug as string, label: r.label as string }))
}

export async function findCategoryId(db: Db, slug: string): Promise<number | undefined> {
  const row = await db.one(sql`SELECT id FROM media_categories WHERE slug = ${slug}`)
  return row ? Number(row.id) : undefined
}

/** Decision 13: a new image goes to the end of its page. */
export async function nextPosition(db: Db, page: Page): Promise<number> {
  const row = await db.one<{ p: number | null }>(sql`SELECT MAX(position) AS p FROM media_images WHERE page = ${page}`)
  return row?.p === null || row?.p === undefined ? 0 : Number(row.p) + 1
}

export async function insertImage(
  db: Db,
  i: { id: string; page: Page; categoryId: number | null; alt: string; caption: string | null; position: number; width: number; height: number
    contentHash: string; originalName: string; originalBytes: number; createdBy: string | null; now: Date },
): Promise<void> {
  await db.execute(sql`
    INSERT INTO media_images (id, page, category_id, alt, caption, position, is_visible, status, width, height, content_hash,
                              original_name, original_bytes, created_by, created_at, updated_at)
    VALUES (${i.id}, ${i.page}, ${i.categoryId}, ${i.alt}, ${i.caption}, ${i.position}, ${1}, 'processing', ${i.width}, ${i.height},
            ${i.contentHash}, ${i.originalName}, ${i.originalBytes}, ${i.createdBy}, ${i.now}, ${i.now})`)
}

/** Replaces the image's variant rows; with `ready`, the image turns ready in the same statement set. */
export async function replaceVariants(tx: Db, imageId: string, variants: readonly VariantRecord[], now: Date): Promise<void> {
  await tx.execute(sql`DELETE FROM media_variants WHERE image_id = ${imageId}`)
  if (variants.length > 0) {
    await tx.execute(sql`
      INSERT INTO media_variants (image_id, format, width, height, bytes, path, is_primary)
      VALUES ${bulk(variants.map((v) => [imageId, v.format, v.width, v.height, v.bytes, v.path, v.isPrimary ? 1 : 0]))}`)
  }
  await tx.execute(sql`UPDATE media_images SET status = 'ready', updated_at = ${now} WHERE id = ${imageId}`)
}

export async function markImageFailed(db: Db, id: string, now: Date): Promise<void> {
  await db.execute(sql`UPDATE media_images SET status = 'failed', updated_at = ${now} WHERE id = ${id}`)
}

/** Decision 15: what a crash left `processing` is `failed`; returns those rows. */
export async function failProcessingImages(db: Db, now: Date): Promise<{ id: string; page: Page; contentHash: string }[]> {
  const rows = await db.query(sql`SELECT id, page, content_hash FROM media_images WHERE status = 'processing'`)
  if (rows.length === 0) return []
  await db.execute(sql`UPDATE media_images SET status = 'failed', updated_at = ${now} WHERE status = 'processing'`)
  return rows.map((r) => ({ id: r.id as string, page: r.page as Page, contentHash: r.content_hash as string }))
}

/**
 * Whether any image row other than `exceptId` (deleted or not, but not failed: a failed image keeps
 * no files) uses this content: on `page`, its derivative directory; without a page, its original.
 */
export async function contentInUse(db: Db, contentHash: string, exceptId: string, page?: Page): Promise<boolean> {
  const onPage = page === undefined ? empty : sql`AND page = ${page}`
  const row = await db.one(sql`
    SELECT id FROM media_images WHERE content_hash = ${contentHash} ${onPage} AND id <> ${exceptId} AND status <> 'failed' LIMIT 1`)
  return row !== undefined
}

export interface ImageFilter {
  page: Page
  category?: string
  visible?: boolean
  /** Only ready images (the public gallery). */
  readyOnly?: boolean
}

/** The page's live images in position order with their variants: two queries, whatever the count. */
export async function listImages(db: Db, f: ImageFilter): Promise<{ image: ImageRecord; variants: VariantRecord[] }[]> {
  const conditions: Sql[] = [sql`i.page = ${f.page}`, sql`i.deleted_at IS NULL`]
  if (f.category !== undefined) conditions.push(sql`c.slug = ${f.category}`)
  if (f.visible !== undefined) conditions.push(sql`i.is_visible = ${f.visible ? 1 : 0}`)
  if (f.readyOnly) conditions.push(sql`i.status = 'ready'`)
  const rows = await db.query(sql`
    SELECT ${IMAGE_COLUMNS} FROM media_images i LEFT JOIN media_categories c ON c.id = i.category_id
    WHERE ${join(conditions, ' AND ')} ORDER BY i.position, i.id`)
  if (rows.length === 0) return []
  const variants = await db.query(sql`
    SELECT v.image_id, v.format, v.width, v.height, v.bytes, v.path, v.is_primary FROM media_variants v
    JOIN media_images i ON i.id = v.image_id LEFT JOIN media_categories c ON c.id = i.category_id
    WHERE ${join(conditions, ' AND ')} ORDER BY v.image_id, v.format, v.width`)
  const byImage = new Map<string, VariantRecord[]>()
  for (const v of variants) {
    const list = byImage.get(v.image_id as string) ?? []
    list.push(toVariant(v))
    byImage.set(v.image_id as string, list)
  }
  return rows.map((r) => ({ image: toImage(r), variants: byImage.get(r.id as string) ?? [] }))
}

/** One live (not deleted) image with its variants. */
export async function findImage(db: Db, id: string): Promise<{ image: ImageRecord; variants: VariantRecord[] } | undefined> {
  const row = await db.one(sql`
    SELECT ${IMAGE_COLUMNS} FROM media_images i LEFT JOIN media_categories c ON c.id = i.category_id
    WHERE i.id = ${id} AND i.deleted_at IS NULL`)
  if (!row) return undefined
  const variants = await db.query(sql`
    SELECT format, width, height, bytes, path, is_primary FROM media_variants WHERE image_id = ${id} ORDER BY format, width`)
  return { image: toImage(row), variants: variants.map(toVariant) }
}

/** Decision 7: the latest `updated_at` of any row of the page, whatever its state; null if none. */
export async function pageUpdatedAt(db: Db, page: Page): Promise<string | null> {
  const row = await db.one<{ at: unknown }>(sql`SELECT MAX(updated_at) AS at FROM media_images WHERE page = ${page}`)
  return row?.at === null || row?.at === undefined ? null : toIso(row.at)
}

export type ImageChanges = { alt?: string; caption?: string | null; categoryId?: number | null; isVisible?: boolean }

export async function updateImage(db: Db, id: string, changes: ImageChanges, now: Date): Promise<void> {
  const sets: Sql[] = [sql`updated_at = ${now}`]
  if (changes.alt !== undefined) sets.push(sql`alt = ${changes.alt}`)
  if (changes.caption !== undefined) sets.push(sql`caption = ${changes.caption}`)
  if (changes.categoryId !== undefined) sets.push(sql`category_id = ${changes.categoryId}`)
  if (changes.isVisible !== undefined) sets.push(sql`is_visible = ${changes.isVisible ? 1 : 0}`)
  await db.execute(sql`UPDATE media_images SET ${join(sets, ', ')} WHERE id = ${id} AND deleted_at IS NULL`)
}

export async function softDeleteImage(db: Db, id: string, now: Date): Promise<boolean> {
  const result = await db.execute(sql`UPDATE media_images SET deleted_at = ${now}, updated_at = ${now} WHERE id = ${id} AND deleted_at IS NULL`)
  return result.affectedRows === 1
}

/** The ids of the page's live images, locking them (MySQL) until the transaction ends. */
export async function lockPageImageIds(tx: Db, page: Page): Promise<string[]> {
  const rows =
    tx.dialect === 'mysql'
      ? await tx.query(sql`SELECT id FROM media_images WHERE page = ${page} AND deleted_at IS NULL FOR UPDATE`)
      : await tx.query(sql`SELECT id FROM media_images WHERE page = ${page} AND deleted_at IS NULL`)
  return rows.map((r) => r.id as string)
}

/** Every position rewritten in one statement: `ids[n]` gets position n. */
export async function setPositions(tx: Db, ids: readonly string[], now: Date): Promise<void> {
  if (ids.length === 0) return
  const cases = join(ids.map((id, n) => sql`WHEN ${id} THEN ${n}`), ' ')
  await tx.execute(sql`UPDATE media_images SET position = CASE id ${cases} END, updated_at = ${now} WHERE id IN (${join(ids)})`)
}

/** Soft-deleted images whose retention ended before `before` (gc). */
export async function findExpiredImages(db: Db, before: Date): Promise<{ id: string; page: Page; contentHash: string }[]> {
  const rows = await db.query(sql`SELECT id, page, content_hash FROM media_images WHERE deleted_at IS NOT NULL AND deleted_at < ${before}`)
  return rows.map((r) => ({ id: r.id as string, page: r.page as Page, contentHash: r.content_hash as string }))
}

export async function deleteImages(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  await db.transaction(async (tx) => {
    await tx.execute(sql`DELETE FROM media_variants WHERE image_id IN (${join(ids)})`)
    await tx.execute(sql`DELETE FROM media_images WHERE id IN (${join(ids)})`)
  })
}

/**
 * What the files on disk may be: the content directories, originals and variant paths of every row
 * but `except` (rows about to go) and failed ones (which keep no files).
 */
export async function referencedContent(db: Db, except: readonly string[] = []): Promise<{ dirs: Set<string>; hashes: Set<string>; paths: Set<string> }> {
  const notImage = except.length > 0 ? sql`AND id NOT IN (${join(except)})` : empty
  const notVariant = except.length > 0 ? sql`WHERE image_id NOT IN (${join(except)})` : empty
  const images = await db.query(sql`
    SELECT DISTINCT page, content_hash FROM media_images WHERE content_hash IS NOT NULL AND status <> 'failed' ${notImage}`)
  const variants = await db.query(sql`SELECT path FROM media_variants ${notVariant}`)
  return {
    dirs: new Set(images.map((r) => `${r.page}/${r.content_hash}`)),
    hashes: new Set(images.map((r) => r.content_hash as string)),
    paths: new Set(variants.map((r) => r.path as string)),
  }
}

/** Ready, live images (reprocess). */
export async function findLiveImages(db: Db): Promise<{ id: string; page: Page; contentHash: string; width: number; height: number }[]> {
  const rows = await db.query(sql`
    SELECT id, page, content_hash, width, height FROM media_images WHERE deleted_at IS NULL AND status = 'ready' ORDER BY id`)
  return rows.map((r) => ({ id: r.id as string, page: r.page as Page, contentHash: r.content_hash as string, width: Number(r.width), height: Number(r.height) }))
}
