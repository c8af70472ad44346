import { readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Deps } from '../../deps.ts'
import { PAGES } from './model.ts'
import { deleteImages, findExpiredImages, referencedContent } from './queries.ts'

/** api.md: soft-deleted images keep their files 30 days. */
export const RETENTION_MS = 30 * 24 * 60 * 60_000
/**
 * Files younger than this are never collected: an upload in a running server writes its original
 * and derivatives before its row can name them.
 */
export const GRACE_MS = 60 * 60_000

export interface GcReport {
  imagesDeleted: string[]
  removed: string[]
}

async function olderThan(path: string, cutoff: number): Promise<boolean> {
  const info = await stat(path).catch(() => undefined)
  return info !== undefined && info.mtimeMs < cutoff
}

const list = (dir: string) => readdir(dir).catch(() => [] as string[])

/**
 * Decision 12 and operations.md `gc`: hard-deletes images soft-deleted more than 30 days ago, then
 * removes what no remaining row references: derivative directories, stray files inside referenced
 * ones (old widths after a reprocess, temporary names a crash left), originals, and old temp files.
 * Idempotent; an interrupted run is finished by the next.
 */
export async function collectGarbage({ config, db, clock }: Pick<Deps, 'config' | 'db' | 'clock'>, options: { dryRun: boolean }): Promise<GcReport> {
  const now = clock.now().getTime()
  const cutoff = now - GRACE_MS
  const expired = await findExpiredImages(db, new Date(now - RETENTION_MS))
  if (!options.dryRun) await deleteImages(db, expired.map((i) => i.id))
  // A dry run keeps the expired rows, so it leaves them out here to list what a real run removes.
  const refs = await referencedContent(db, options.dryRun ? expired.map((i) => i.id) : [])
  const removed: string[] = []
  const remove = async (path: string, label: string) => {
    removed.push(label)
    if (!options.dryRun) await rm(path, { recursive: true, force: true })
  }

  const { root, storageRoot } = config.media
  for (const page of PAGES) {
    for (const hash of await list(join(root, page))) {
      const dir = join(root, page, hash)
      if (!refs.dirs.has(`${page}/${hash}`)) {
        if (await olderThan(dir, cutoff)) await remove(dir, `${page}/${hash}/`)
        continue
      }
      for (const name of await list(dir)) {
        const path = `${page}/${hash}/${name}`
        if (!refs.paths.has(path) && (await olderThan(join(dir, name), cutoff))) await remove(join(dir, name), path)
      }
    }
  }
  for (const name of await list(join(storageRoot, 'originals'))) {
    const hash = name.split('.')[0]!
    const path = join(storageRoot, 'originals', name)
    if (!refs.hashes.has(hash) && (await olderThan(path, cutoff))) await remove(path, `originals/${name}`)
  }
  for (const name of await list(join(storageRoot, 'tmp'))) {
    const path = join(storageRoot, 'tmp', name)
    if (await olderThan(path, now - 24 * 60 * 60_000)) await remove(path, `tmp/${name}`)
  }
  return { imagesDeleted: expired.map((i) => i.id), removed }
}
