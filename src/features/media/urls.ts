import type { VariantRecord } from './queries.ts'
import type { Variants } from './model.ts'

/** Absolute URLs: `ASSET_BASE_URL` + the variant's path under `MEDIA_ROOT`. */
export function assetUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path}`
}

/** The `avif` and `webp` lists (by width) and the JPEG primary's URL of one image's variants. */
export function presentVariants(base: string, variants: readonly VariantRecord[]): { variants: Variants; src: string | null; largest?: VariantRecord } {
  const list = (format: 'avif' | 'webp') =>
    variants
      .filter((v) => v.format === format)
      .sort((a, b) => a.width - b.width)
      .map((v) => ({ url: assetUrl(base, v.path), width: v.width }))
  const primary = variants.find((v) => v.isPrimary)
  const largest = variants.reduce<VariantRecord | undefined>((best, v) => (best && best.width >= v.width ? best : v), undefined)
  return { variants: { avif: list('avif'), webp: list('webp') }, src: primary ? assetUrl(base, primary.path) : null, largest }
}
