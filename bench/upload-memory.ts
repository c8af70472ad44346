/**
 * Memory across uploads: `--uploads N` (default 12) 6 MP photos through the pipeline (normalise +
 * writeDerivatives) one after another in this process, the RSS after each (after a full GC).
 * Goal: no climb — the last uploads stay within 1.2x of the level after the first.
 * See docs/performance.md ("Memory across uploads").
 *
 *   bun run bench/upload-memory.ts [--uploads 12]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { normalise, writeDerivatives } from '../src/features/media/pipeline.ts'
import { photo } from '../test/images.ts'
import { memory } from './lib/memory.ts'

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { uploads: { type: 'string', default: '12' } } })
const uploads = Number(values.uploads)
const root = mkdtempSync(join(os.tmpdir(), 'bench-upload-memory-'))
const after: number[] = []
const started = performance.now()
try {
  for (let n = 0; n < uploads; n++) {
    // A slightly different photo each time, so no upload shares another's directory.
    const file = join(root, `upload-${n}.jpg`)
    writeFileSync(file, await photo(3000 + n * 8, 2000))
    const normalised = await normalise(file, join(root, 'storage'))
    await writeDerivatives(normalised.originalPath, join(root, 'media'), 'genesis', normalised)
    after.push(memory().rss)
  }
} finally {
  rmSync(root, { recursive: true, force: true })
}
const level = after[0]!
const highest = Math.max(...after.slice(1))
console.log(`${uploads} uploads of a 6 MP photo in ${((performance.now() - started) / 1000).toFixed(1)} s (photo making included)`)
console.log(`RSS after each: ${after.join(' ')} MB`)
console.log(`highest after the first ${highest} MB vs ${level} MB after the first: ${(highest / level).toFixed(2)}x (goal <= 1.2x, no climb)`)
