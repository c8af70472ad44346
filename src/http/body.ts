import { Elysia } from 'elysia'
import { BadRequest, PayloadTooLarge } from './errors.ts'

/** JSON and form bodies: 100 kb (api.md Limits). Multipart uploads carry their own limit. */
export const BODY_LIMIT = 100 * 1024

/**
 * Reads every non-multipart body ourselves, with a size cap enforced on the declared length and on
 * the bytes actually received (a chunked body has no length), so no route buffers more than the cap.
 */
export const bodyParser = new Elysia({ name: 'http.body' }).onParse({ as: 'global' }, async ({ request, contentType }) => {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  if (type === 'multipart/form-data') return undefined
  const text = await readText(request, BODY_LIMIT)
  if (type === 'application/json' || type.endsWith('+json')) {
    if (text.trim() === '') return null
    try {
      return JSON.parse(text)
    } catch {
      throw new BadRequest('Malformed JSON body')
    }
  }
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(text))
  return text
})

export async function readText(request: Request, limit: number): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (declared > limit) throw new PayloadTooLarge()
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => {})
      throw new PayloadTooLarge()
    }
    chunks.push(value)
  }
  return new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks))
}
