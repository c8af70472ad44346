import type { Config } from '../config.ts'
import { createDb } from '../db/index.ts'
import { sharp, sharpVersions } from '../lib/sharp.ts'

/**
 * Checks that this host can run the service: the database answers and image encoding works (the
 * executable's embedded libvips included). Prints one line per check; exit 1 when any fails.
 */
export async function run(config: Config): Promise<number> {
  let failed = false
  const check = async (name: string, fn: () => Promise<string>) => {
    try {
      console.log(`ok    ${name}: ${await fn()}`)
    } catch (error) {
      failed = true
      console.log(`FAIL  ${name}: ${(error as Error).message}`)
    }
  }
  await check('config', async () => `${config.env}, database ${config.db.driver}`)
  await check('database', async () => {
    const db = createDb(config)
    try {
      const started = performance.now()
      await db.ping()
      return `answered in ${(performance.now() - started).toFixed(1)} ms`
    } finally {
      await db.close()
    }
  })
  await check('images', async () => {
    const source = sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 200, g: 120, b: 40 } } })
    const sizes: string[] = []
    for (const format of ['avif', 'webp', 'jpeg'] as const) {
      const out = await source.clone().resize({ width: 640 }).toFormat(format).toBuffer({ resolveWithObject: true })
      if (out.info.width !== 640) throw new Error(`${format} came out ${out.info.width} px wide`)
      sizes.push(`${format} ${out.data.byteLength} B`)
    }
    const v = sharpVersions()
    return `sharp ${v.sharp}, libvips ${v.vips}: ${sizes.join(', ')}`
  })
  return failed ? 1 : 0
}
