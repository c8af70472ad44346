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
// One libvips worker thread per image operation; an upload runs two encodes side by side instead
// (src/features/media/pipeline.ts). On the 2-core host that was the fastest of 1 or 2 threads x 1 or
// 2 encodes for a 24 MP upload (docs/performance.md, "Upload").
sharp.concurrency(1)

// Decode only the formats an upload may be (decision 10). Every other libvips loader, SVG (librsvg),
// the native .v format, and whatever a libvips upgrade adds, is blocked for the whole process, so no
// bytes, whatever they claim to be, can reach one. Blocking a class blocks its File, Buffer and
// Source subclasses; sharp's raw and `create` inputs are not loaders and keep working.
export const ALLOWED_LOADERS = [
  'VipsForeignLoadJpeg',
  'VipsForeignLoadPng',
  'VipsForeignLoadWebp',
  'VipsForeignLoadHeif', // AVIF; HEIC is refused before decoding (and this libheif has no HEVC decoder)
  'VipsForeignLoadNsgif',
  'VipsForeignLoadTiff',
]
sharp.block({ operation: ['VipsForeignLoad'] })
sharp.unblock({ operation: ALLOWED_LOADERS })

export function sharpVersions(): { sharp: string; vips: string } {
  return { sharp: sharp.versions.sharp, vips: sharp.versions.vips }
}

/** Where the embedded native libraries were loaded from (null when running from source). */
export { embeddedSharpRuntime }
