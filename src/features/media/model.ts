import { t } from 'elysia'
import { oneOf } from '../../http/schemas.ts'

export const PAGES: ['genesis', 'hive'] = ['genesis', 'hive']
export const Page = oneOf(PAGES, { error: 'must be genesis or hive' })
export type Page = typeof Page.static

const VariantRef = t.Object({ url: t.String(), width: t.Integer({ minimum: 1 }) })
export const Variants = t.Object({ avif: t.Array(VariantRef), webp: t.Array(VariantRef) })
export type Variants = typeof Variants.static

/** The admin's view of an image (api.md MediaImage). */
export const MediaImage = t.Object({
  id: t.String(),
  page: Page,
  category: t.Nullable(t.String()),
  alt: t.String(),
  caption: t.Nullable(t.String()),
  order: t.Integer(),
  isVisible: t.Boolean(),
  status: oneOf(['ready', 'processing', 'failed']),
  width: t.Integer({ minimum: 1 }),
  height: t.Integer({ minimum: 1 }),
  // Null until the image is `ready` (a failed upload has no derivatives).
  src: t.Nullable(t.String()),
  variants: Variants,
  createdAt: t.String(),
  updatedAt: t.String(),
}, { title: 'MediaImage' })
export type MediaImage = typeof MediaImage.static

export const Category = t.Object({ id: t.Integer(), slug: t.String(), label: t.String() }, { title: 'Category' })

// Alt text is required: after trimming it must keep a visible character.
const Alt = t.String({ minLength: 1, maxLength: 255, pattern: '\\S', error: 'must be 1 to 255 characters' })
const Caption = t.String({ maxLength: 500, error: 'must be at most 500 characters' })
const CategorySlug = t.String({ minLength: 1, maxLength: 64, error: 'must be a category slug' })

/** The text fields of the multipart upload, checked after the file is set aside. */
export const UploadFields = t.Object({
  page: Page,
  alt: Alt,
  caption: t.Optional(Caption),
  category: t.Optional(CategorySlug),
})
export type UploadFields = typeof UploadFields.static

/** The upload's multipart form as the OpenAPI document shows it; the route reads it by hand. */
export const UploadForm = {
  schema: t.Object({
    file: t.String({ format: 'binary', description: 'The image, at most 25 MB: JPEG, PNG, WebP, AVIF, GIF or TIFF, as its bytes tell' }),
    ...UploadFields.properties,
  }),
  encoding: { file: { contentType: 'image/*' } },
}

export const ListQuery = t.Object({
  page: Page,
  category: t.Optional(CategorySlug),
  visible: t.Optional(oneOf(['0', '1'], { error: 'must be 0 or 1' })),
})

export const UpdateBody = t.Object({
  alt: t.Optional(Alt),
  caption: t.Optional(t.Nullable(Caption)),
  category: t.Optional(t.Nullable(CategorySlug)),
})

export const VisibilityBody = t.Object({ isVisible: t.Boolean({ error: 'must be true or false' }) })

export const OrderBody = t.Object({
  page: Page,
  ids: t.Array(t.String({ maxLength: 64 }), { maxItems: 10_000, error: 'must be the list of image ids' }),
})
