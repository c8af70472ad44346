/**
 * Build metadata. scripts/build.ts replaces the global identifiers
 * `__BUILD_SHA__` / `__BUILD_VERSION__` with string literals (Bun.build
 * `define`); when running from source they do not exist.
 */
import pkg from '../package.json' with { type: 'json' }

declare const __BUILD_SHA__: string | undefined
declare const __BUILD_VERSION__: string | undefined

/** Short git commit of the build, 'unknown' if git failed at build time, 'dev' from source. */
export const buildSha: string = typeof __BUILD_SHA__ === 'string' ? __BUILD_SHA__ : 'dev'

/** package.json version (baked in at build time, read from package.json from source). */
export const buildVersion: string = typeof __BUILD_VERSION__ === 'string' ? __BUILD_VERSION__ : pkg.version
