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
  for (const image of await findLiveImages(db)) {
    // Exactly what normalise() writes: a copy set aside as `<hash>.jpg.bak` is not the original.
    const original = names.find((name) => name === `${image.contentHash}.jpg` || name === `${image.contentHash}.png`)
    if (!original) {
      report.failed.push({ id: image.id, reason: 'original missing' })
      progress(`skipped ${image.id}: its original is missing`)
      continue
    }
    try {
      const variants = await writeDerivatives(join(originals, original), config.media.root, image.page, image)
      await db.transaction((tx) => replaceVariants(tx, image.id, variants, clock.now()))
      report.done.push(image.id)
      progress(`reprocessed ${image.id} (${variants.length} variants)`)
    } catch (error) {
      report.failed.push({ id: image.id, reason: (error as Error).message })
      progress(`failed ${image.id}: ${(error as Error).message}`)
    }
  }
  return report
}
