import type { Config } from '../config.ts'
import { createDb } from '../db/index.ts'
import { collectGarbage } from '../features/media/gc.ts'
import { reprocessAll } from '../features/media/reprocess.ts'
import { systemClock } from '../lib/clock.ts'
import { printGcReport } from './gc.ts'

/** `reprocess [--gc]`: see features/media/reprocess.ts. Exit 1 when any image could not be redone. */
export async function run(config: Config, args: string[]): Promise<number> {
  const db = createDb(config)
  const deps = { config, db, clock: systemClock }
  try {
    const report = await reprocessAll(deps, (line) => console.log(line))
    console.log(`reprocess: ${report.done.length} image(s) reprocessed, ${report.failed.length} failed`)
    if (args.includes('--gc')) {
      printGcReport(await collectGarbage(deps, { dryRun: false }), false)
    }
    return report.failed.length > 0 ? 1 : 0
  } catch (error) {
    console.error(`spaces-api reprocess: ${(error as Error).message}`)
    return 1
  } finally {
    await db.close()
  }
}
