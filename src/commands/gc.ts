import type { Config } from '../config.ts'
import { createDb } from '../db/index.ts'
import { collectGarbage, type GcReport } from '../features/media/gc.ts'
import { systemClock } from '../lib/clock.ts'

/** One line per removal, then a summary; `reprocess --gc` prints the same. */
export function printGcReport(report: GcReport, dryRun: boolean): void {
  const verb = dryRun ? 'would remove' : 'removed'
  for (const id of report.imagesDeleted) console.log(`${dryRun ? 'would delete' : 'deleted'} image ${id}`)
  for (const path of report.removed) console.log(`${verb} ${path}`)
  console.log(`gc${dryRun ? ' (dry run)' : ''}: ${report.imagesDeleted.length} expired image(s), ${report.removed.length} file(s) or directories ${verb}`)
}

/** `gc [--dry-run]`: see features/media/gc.ts. Prints one line per removal and a summary. */
export async function run(config: Config, args: string[]): Promise<number> {
  const dryRun = args.includes('--dry-run')
  const db = createDb(config)
  try {
    printGcReport(await collectGarbage({ config, db, clock: systemClock }, { dryRun }), dryRun)
    return 0
  } catch (error) {
    console.error(`spaces-api gc: ${(error as Error).message}`)
    return 1
  } finally {
    await db.close()
  }
}
