/**
 * The one place the app imports sharp from.
 *
 * From source (`bun run`, `bun test`) this is plain sharp from node_modules.
 * In the compiled executable the build plugin (scripts/sharp-embed-plugin.ts)
 * swaps sharp's addon locator for src/lib/sharp-native.ts, which loads the
 * libvips + addon copies embedded in the binary; this file does not change.
 */
import { dlopen } from 'bun:ffi'
import sharpModule from 'sharp'
import { embeddedSharpRuntime } from './sharp-native.ts'

export const sharp: typeof import('sharp') = sharpModule

// Library-wide settings, applied once on import.
// No libvips operation cache: every request handles a different image, so
// the cache only holds memory.
sharp.cache(false)
// One libvips worker thread per image operation; an upload runs two encodes side by side instead
// (src/features/media/pipeline.ts). Of 1 or 2 threads x 1 or 2 encodes at once, that was the
// fastest for a 24 MP upload on the 2-core host (docs/performance.md, "Upload").
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

// glibc keeps the memory libvips frees, so the RSS of a long-running process creeps up upload
// after upload. Two settings, both no-ops off glibc:
// - A fixed mmap threshold (P55). glibc raises its threshold each time a large block is freed, up
//   to 32 MiB, after which libvips' pixel buffers come from the heap and stay there. Fixed at its
//   default of 128 KiB, they are mapped and unmapped: twelve 6 MP uploads in a row ended between
//   93 and 114 MB instead of climbing to 120-180 MB, at the same speed (docs/performance.md).
// - A trim after each image job: over eight 24 MP uploads in a row the peak climbed from 340 to
//   590 MB without one, and levelled off at 430-520 MB with it.
const M_MMAP_THRESHOLD = -3
const libc = (() => {
  try {
    return dlopen('libc.so.6', {
      malloc_trim: { args: ['usize'], returns: 'i32' },
      mallopt: { args: ['i32', 'i32'], returns: 'i32' },
    })
  } catch {
    return undefined
  }
})()
libc?.symbols.mallopt(M_MMAP_THRESHOLD, 128 * 1024)

/** Hands memory freed by libvips back to the OS; call after a large image job. */
export function releaseNativeMemory(): void {
  libc?.symbols.malloc_trim(0)
}

export function sharpVersions(): { sharp: string; vips: string } {
  return { sharp: sharp.versions.sharp, vips: sharp.versions.vips }
}

/** Where the embedded native libraries were loaded from (null when running from source). */
export { embeddedSharpRuntime }
