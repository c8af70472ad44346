import { t } from 'elysia'
import { Variants } from '../media/model.ts'

/** api.md GalleryImage: the public consumer parses it strictly, so no extra keys. */
export const GalleryImage = t.Object(
  {
    id: t.String(),
    alt: t.String(),
    caption: t.Optional(t.String()),
    order: t.Integer(),
    width: t.Integer({ minimum: 1 }),
    height: t.Integer({ minimum: 1 }),
    src: t.String(),
    variants: Variants,
  },
  { title: 'GalleryImage', additionalProperties: false },
)
export type GalleryImage = typeof GalleryImage.static

export const SpaceGallery = t.Object({ slug: t.String(), updatedAt: t.String(), images: t.Array(GalleryImage) }, { title: 'SpaceGallery', additionalProperties: false })
export type SpaceGallery = typeof SpaceGallery.static

export const GalleryParams = t.Object({ slug: t.String() })
// No maxLength: a slug longer than any category's is just an unknown slug, 200 with no images (decision 8).
export const GalleryQuery = t.Object({ category: t.Optional(t.String()) })
