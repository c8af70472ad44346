import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Deps } from '../../deps.ts'
import { writeDerivatives } from './pipeline.ts'
import { findLiveImages, replaceVariants } from './queries.ts'

export interface ReprocessReport {
  done: string[]
  failed: { id: string; reason: string }[]
}

/**
 * operations.md `reprocess`: regenerates every live image's derivatives from its private original,
 * then swaps its variant rows in one transaction. Files are renamed into place, so readers never
 * see half a file; files of widths no longer made are left for `gc`. Safe to interrupt and rerun.
 */
export async function reprocessAll(
  { config, db, clock }: Pick<Deps, 'config' | 'db' | 'clock'>,
  progress: (line: string) => void = () => {},
): Promise<ReprocessReport> {
  const originals = join(config.media.storageRoot, 'originals')
  const names = await readdir(originals).catch(() => [] as string[])
  const report: ReprocessReport = { done: [], failed: [] }
  // Images sharing a content directory (decision 12) share one encode.
  const groups = new Map<string, Awaited<ReturnType<typeof findLiveImages>>>()
  for (const image of await findLiveImages(db)) {
    const key = `${image.page}/${image.contentHash}`
    groups.set(key, [...(groups.get(key) ?? []), image])
  }
  for (const images of groups.values()) {
    const first = images[0]!
    // Exactly what normalise() writes: a copy set aside as `<hash>.jpg.bak` is not the original.
    const original = names.find((name) => name === `${first.contentHash}.jpg` || name === `${first.contentHash}.png`)
    if (!original) {
      for (const image of images) {
        report.failed.push({ id: image.id, reason: 'original missing' })
        progress(`skipped ${image.id}: its original is missing`)
      }
      continue
    }
    let variants: Awaited<ReturnType<typeof writeDerivatives>>
    try {
      variants = await writeDerivatives(join(originals, original), config.media.root, first.page, first)
    } catch (error) {
      for (const image of images) {
        report.failed.push({ id: image.id, reason: (error as Error).message })
        progress(`failed ${image.id}: ${(error as Error).message}`)
      }
      continue
    }
    for (const image of images) {
      await db.transaction((tx) => replaceVariants(tx, image.id, variants, clock.now()))
      report.done.push(image.id)
      progress(`reprocessed ${image.id} (${variants.length} variants)`)
    }
  }
  return report
}
