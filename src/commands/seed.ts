import type { Config } from '../config.ts'

// The body of `seed` arrives with its feature; until then it says so instead of pretending.
export async function run(_config: Config): Promise<number> {
  console.error('spaces-api seed: not available in this build yet')
  return 2
}
