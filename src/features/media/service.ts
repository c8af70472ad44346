import { mkdir, readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { ulid } from 'ulid'
import type { Deps } from '../../deps.ts'
import { readForm } from '../../http/body.ts'
import { BadRequest, HttpError, NotFound, PayloadTooLarge, schemaProblems, ServerFailure, ServiceUnavailable, Unprocessable } from '../../http/errors.ts'
import { findOr404, isUlid } from '../../http/schemas.ts'
import { log } from '../../lib/log.ts'
import { serialQueue } from '../../lib/serial.ts'
import { type MediaImage, type Page, UploadFields } from './model.ts'
import { normalise, sniffImage, writeDerivatives } from './pipeline.ts'
import {
  contentInUse,
  failProcessingImages,
  findCategoryId,
  findImage,
  insertImage,
  listCategories,
  listImages,
  lockPageImageIds,
  markImageFailed,
  nextPosition,
  replaceVariants,
  setPositions,
  softDeleteImage,
  updateImage,
  type ImageChanges,
  type ImageRecord,
  type VariantRecord,
} from './queries.ts'
import { presentVariants } from './urls.ts'

/** api.md: an upload of at most 25 MB (MiB: 26,214,400 bytes). */
export const UPLOAD_LIMIT = 25 * 1024 * 1024
// The multipart envelope around the file: boundaries, part headers and the text fields.
const ENVELOPE = 64 * 1024
/** Uploads allowed to wait behind the one being processed (decision 14) before new ones get 503. */
const MAX_WAITING = 8

export function toMediaImage(base: string, image: ImageRecord, variants: readonly VariantRecord[]): MediaImage {
  const shown = presentVariants(base, variants)
  return {
    id: image.id,
    page: image.page,
    category: image.category,
    alt: image.alt,
    caption: image.caption,
    order: image.position,
    isVisible: image.isVisible,
    status: image.status,
    width: image.width,
    height: image.height,
    src: image.status === 'ready' ? shown.src : null,
    variants: image.status === 'ready' ? shown.variants : { avif: [], webp: [] },
    createdAt: image.createdAt.toISOString(),
    updatedAt: image.updatedAt.toISOString(),
  }
}

const text = (v: unknown) => (typeof v === 'string' ? v.trim() : v)

/** A short, safe description of a storage failure for the client; the full error goes to the log. */
function storageFailure(error: unknown): HttpError {
  if (error instanceof HttpError) return error
  const code = (error as { code?: string } | null)?.code
  // libvips reports a full disk in its message, not with a code.
  if (code === 'ENOSPC' || code === 'EDQUOT' || /No space left on device|Disk quota exceeded/i.test(String((error as Error)?.message))) {
    return new ServerFailure(507, 'Not enough disk space to store the image; nothing was kept')
  }
  return new ServerFailure(500, 'The image could not be processed; nothing was kept')
}

/** `changed` is told after every write that the public gallery may show (it clears the gallery cache). */
export function createMediaService(
  { config, db, clock, lifecycle }: Pick<Deps, 'config' | 'db' | 'clock' | 'lifecycle'>,
  changed: () => void = () => {},
) {
  const { root: mediaRoot, storageRoot, assetBaseUrl } = config.media
  const tmpDir = join(storageRoot, 'tmp')
  const queue = serialQueue()
  const present = (found: { image: ImageRecord; variants: VariantRecord[] }) => toMediaImage(assetBaseUrl, found.image, found.variants)

  const load = (id: string) => findOr404(id, (key) => findImage(db, key), 'No such image')

  async function categoryId(slug: string | null | undefined): Promise<number | null | undefined> {
    if (slug === undefined || slug === null) return slug
    const id = await findCategoryId(db, slug)
    if (id === undefined) throw new Unprocessable('Unknown category', { category: 'is not a known category' })
    return id
  }

  /** Removes what an image's attempt left on disk, unless another image row shares it (decision 12). */
  async function discardFiles(id: string, page: Page, contentHash: string): Promise<void> {
    const remove = (path: string) => rm(path, { recursive: true, force: true }).catch((error) => log.error({ err: error, path }, 'could not remove a file'))
    if (!(await contentInUse(db, contentHash, id, page))) await remove(join(mediaRoot, page, contentHash))
    if (!(await contentInUse(db, contentHash, id))) {
      const originals = join(storageRoot, 'originals')
      for (const name of await readdir(originals).catch(() => [] as string[])) {
        if (name.startsWith(`${contentHash}.`)) await remove(join(originals, name))
      }
    }
  }

  /**
   * Reads and checks the multipart body and writes the file to `STORAGE_ROOT/tmp` under a name of
   * ours (the client's name is only recorded). The buffered body goes out of scope when this
   * returns, so an upload waiting in the queue holds its file on disk, not in memory.
   */
  async function setAside(request: Request) {
    if (!/^multipart\/form-data\s*;/i.test(request.headers.get('content-type') ?? '')) {
      throw new BadRequest('An upload is sent as multipart/form-data', { file: 'must be sent as multipart/form-data' })
    }
    const form = await readForm(request, UPLOAD_LIMIT + ENVELOPE, config.server.bodyTimeoutSec * 1000)
    const file = form.get('file')
    // The size first: an oversize file is 413 whatever else is wrong with the request.
    if (file instanceof Blob && file.size > UPLOAD_LIMIT) throw new PayloadTooLarge('The file is larger than 25 MB')
    const input = { page: text(form.get('page')), alt: text(form.get('alt')), caption: text(form.get('caption') ?? undefined), category: text(form.get('category') ?? undefined) }
    const problems = schemaProblems(UploadFields, input, (_key, error) => (error.schema as { error?: string }).error ?? error.message)
    if (!(file instanceof Blob)) problems.file = 'is required (an image file)'
    if (Object.keys(problems).length > 0) throw new BadRequest('Invalid upload', problems)
    const upload = file as File
    if (upload.size === 0) throw new Unprocessable('The file is empty', { file: 'is empty' })
    const fields = input as UploadFields
    const category = (await categoryId(fields.category)) ?? null
    await mkdir(tmpDir, { recursive: true })
    const tmp = join(tmpDir, `${ulid()}.upload`)
    try {
      await Bun.write(tmp, upload)
    } catch (error) {
      await rm(tmp, { force: true })
      log.error({ event: 'media_upload_failed', error: String(error) }, 'upload could not be set aside')
      throw storageFailure(error)
    }
    return { tmp, fields, category, original: { name: (upload.name || 'upload').slice(0, 255), bytes: upload.size } }
  }

  /** Decodes, normalises and derives one upload; runs inside the queue. */
  async function process(tmp: string, fields: UploadFields, category: number | null, original: { name: string; bytes: number }, by: string) {
    const n = await normalise(tmp, storageRoot)
    const id = ulid()
    await insertImage(db, {
      id,
      page: fields.page,
      categoryId: category,
      alt: fields.alt,
      caption: fields.caption || null,
      position: await nextPosition(db, fields.page),
      width: n.width,
      height: n.height,
      contentHash: n.contentHash,
      originalName: original.name,
      originalBytes: original.bytes,
      createdBy: by,
      now: clock.now(),
    })
    try {
      const variants = await writeDerivatives(n.originalPath, mediaRoot, fields.page, n)
      await db.transaction((tx) => replaceVariants(tx, id, variants, clock.now()))
      changed()
    } catch (error) {
      log.error({ event: 'media_upload_failed', imageId: id, err: error }, 'image processing failed')
      await discardFiles(id, fields.page, n.contentHash).catch((e) => log.error({ err: e }, 'cleanup after a failed upload failed'))
      await markImageFailed(db, id, clock.now())
      throw storageFailure(error)
    }
    log.info({ event: 'media_uploaded', imageId: id, page: fields.page, by }, 'image uploaded')
    return present(await load(id))
  }

  return {
    async categories() {
      return { categories: await listCategories(db) }
    },

    async list(query: { page: Page; category?: string; visible?: '0' | '1' }) {
      const rows = await listImages(db, { page: query.page, category: query.category, visible: query.visible === undefined ? undefined : query.visible === '1' })
      return { images: rows.map(present) }
    },

    /** POST /admin/media: the multipart body is read here, after the admin guard, with the upload cap. */
    async upload(request: Request, by: string): Promise<MediaImage> {
      if (lifecycle.draining) throw new ServiceUnavailable('The server is restarting; upload again in a moment', 30)
      // Each waiting upload holds its file on disk, not in memory, but a long queue would still
      // outlast a shutdown's grace period: beyond this many, ask the portal to retry.
      if (queue.waiting >= MAX_WAITING) throw new ServiceUnavailable('Too many uploads in progress; try again shortly', 10)
      const { tmp, fields, category, original } = await setAside(request)
      try {
        await sniffImage(tmp)
        return await queue.run(() => process(tmp, fields, category, original, by))
      } catch (error) {
        if (error instanceof HttpError) throw error
        log.error({ event: 'media_upload_failed', error: String(error), stack: (error as Error)?.stack }, 'upload could not be processed')
        throw storageFailure(error)
      } finally {
        await rm(tmp, { force: true })
      }
    },

    async update(id: string, body: { alt?: string; caption?: string | null; category?: string | null }) {
      await load(id)
      const changes: ImageChanges = {
        alt: body.alt?.trim(),
        caption: body.caption === undefined ? undefined : body.caption?.trim() || null,
        categoryId: await categoryId(body.category),
      }
      await updateImage(db, id, changes, clock.now())
      changed()
      return { image: present(await load(id)) }
    },

    async setVisible(id: string, isVisible: boolean) {
      await load(id)
      await updateImage(db, id, { isVisible }, clock.now())
      changed()
      return { image: present(await load(id)) }
    },

    /** The complete, ordered id list of a page's live images; all positions rewritten in one transaction. */
    async order(page: Page, ids: string[]) {
      await db.transaction(async (tx) => {
        const current = new Set(await lockPageImageIds(tx, page))
        const given = new Set(ids)
        const same = given.size === ids.length && given.size === current.size && ids.every((id) => current.has(id))
        if (!same) throw new Unprocessable(`ids must list every image of ${page} exactly once`, { ids: 'must be exactly the ids of the page’s images, each once' })
        await setPositions(tx, ids, clock.now())
      })
      changed()
      return { ok: true as const }
    },

    async remove(id: string) {
      if (!isUlid(id) || !(await softDeleteImage(db, id, clock.now()))) throw new NotFound('No such image')
      changed()
      log.info({ event: 'media_deleted', imageId: id }, 'image soft-deleted')
    },

    /** Decision 15: at start-up, `processing` images become `failed` and temporary files go. */
    // Queued, so no upload of this process is mid-processing meanwhile; temp files of uploads that
    // arrived since the start are newer than `since` and stay.
    recover(since = new Date()) {
      return queue.run(async () => {
        for (const image of await failProcessingImages(db, clock.now())) {
          await discardFiles(image.id, image.page, image.contentHash)
          log.warn({ event: 'media_upload_interrupted', imageId: image.id }, 'image left processing by a stopped process marked failed')
          changed()
        }
        await mkdir(tmpDir, { recursive: true })
        for (const name of await readdir(tmpDir)) {
          const path = join(tmpDir, name)
          const modified = (await stat(path).catch(() => undefined))?.mtime
          if (modified && modified < since) await rm(path, { recursive: true, force: true })
        }
      })
    },

    /** Resolves once queued uploads are done. */
    idle: () => queue.idle(),
  }
}

export type MediaService = ReturnType<typeof createMediaService>
