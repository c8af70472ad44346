/**
 * The one place the app imports sharp from.
 *
 * From source (`bun run`, `bun test`) this is plain sharp from node_modules.
 * In the compiled executable the build plugin (scripts/sharp-embed-plugin.ts)
 * swaps sharp's addon locator for src/lib/sharp-native.ts, which loads the
 * libvips + addon copies embedded in the binary; this file does not change.
 */
import sharpModule from 'sharp'
import { embeddedSharpRuntime } from './sharp-native.ts'

export const sharp: typeof import('sharp') = sharpModule

// Library-wide settings, applied once on import.
// No libvips operation cache: every request handles a different image, so
// the cache only holds memory.
sharp.cache(false)
// One libvips worker thread per image operation.
// TODO(media issue): tune by measurement together with the request concurrency.
sharp.concurrency(1)

export function sharpVersions(): { sharp: string; vips: string } {
  return { sharp: sharp.versions.sharp, vips: sharp.versions.vips }
}

/** Where the embedded native libraries were loaded from (null when running from source). */
export { embeddedSharpRuntime }
