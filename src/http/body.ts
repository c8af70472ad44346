import { Elysia } from 'elysia'
import { BadRequest, PayloadTooLarge, RequestTimeout } from './errors.ts'

/** JSON and form bodies: 100 kb (api.md Limits). Multipart uploads carry their own limit. */
export const BODY_LIMIT = 100 * 1024

/**
 * Reads every non-multipart body ourselves, with a size cap enforced on the declared length and on
 * the bytes actually received (a chunked body has no length), so no route buffers more than the cap.
 */
export const bodyParser = (options: { timeoutMs: number }) =>
  new Elysia({ name: 'http.body', seed: options }).onParse({ as: 'global' }, async ({ request, contentType }) => {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  if (type === 'multipart/form-data') {
    // The upload route reads its own body, after the admin guard, with the upload limit.
    if (request.method === 'POST' && UPLOAD_PATHS.has(new URL(request.url).pathname)) return null
    const fields: Record<string, unknown> = {}
    ;(await readForm(request, BODY_LIMIT, options.timeoutMs)).forEach((value, key) => {
      fields[key] = value
    })
    return fields
  }
  const text = await readText(request, BODY_LIMIT, options.timeoutMs)
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

/** The one route that takes a large multipart body (`POST`), with or without its trailing slash. */
const UPLOAD_PATHS = new Set(['/admin/media', '/admin/media/'])

export async function readText(request: Request, limit: number, timeoutMs?: number): Promise<string> {
  return new TextDecoder('utf-8', { fatal: false }).decode(await readBytes(request, limit, timeoutMs))
}

/** A multipart body read with the size cap, then parsed; a malformed one is 400. */
export async function readForm(request: Request, limit: number, timeoutMs?: number): ReturnType<Response['formData']> {
  const bytes = await readBytes(request, limit, timeoutMs)
  try {
    return await new Response(bytes, { headers: { 'content-type': request.headers.get('content-type') ?? '' } }).formData()
  } catch {
    throw new BadRequest('Malformed multipart body')
  }
}

/**
 * The body, at most `limit` bytes (413 beyond, on the declared length or the bytes received) and
 * within `timeoutMs` from the start of reading (408 after: a client trickling its body cannot hold
 * the request open).
 */
export async function readBytes(request: Request, limit: number, timeoutMs = Number.POSITIVE_INFINITY): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (declared > limit) throw new PayloadTooLarge()
  if (!request.body) return new Uint8Array()
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  let timer: Timer | undefined
  const timedOut = new Promise<never>((_, reject) => {
    if (Number.isFinite(timeoutMs)) timer = setTimeout(() => reject(new RequestTimeout()), timeoutMs)
  })
  timedOut.catch(() => {})
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), timedOut])
      if (done) break
      size += value.byteLength
      if (size > limit) throw new PayloadTooLarge()
      chunks.push(value)
    }
  } catch (error) {
    await reader.cancel().catch(() => {})
    throw error
  } finally {
    clearTimeout(timer)
  }
  return Buffer.concat(chunks)
}
