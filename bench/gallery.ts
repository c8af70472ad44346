/**
 * GET /spaces/genesis/gallery with a page of 40 ready images (9 variants each), beside a bare
 * Bun.serve returning the same bytes in the same run (the ceiling; goal: at least 0.6 of it). Then
 * the gallery's latency while uploads of a 12-megapixel photo run back to back (goal: p99 < 50 ms).
 * The gallery load comes from a child process (bench/lib/client.ts); the uploads from this one.
 *
 *   bun run bench/gallery.ts [--seconds 5] [--connections 50]      (TEST_DB=mysql for MariaDB)
 */
import { parseArgs } from 'node:util'
import { ulid } from 'ulid'
import { insertImage, replaceVariants } from '../src/features/media/queries.ts'
import { planVariants } from '../src/features/media/pipeline.ts'
import { bearer, createAdmin, login } from '../test/factories.ts'
import { startApp } from '../test/harness.ts'
import { photo } from '../test/images.ts'
import { loadFromChild, ms } from './lib/load.ts'

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { seconds: { type: 'string', default: '5' }, connections: { type: 'string', default: '50' } } })
const seconds = Number(values.seconds)
const connections = Number(values.connections)

const app = await startApp({ env: { LOG_LEVEL: 'warn' } })
// 40 ready images straight into the database: the gallery reads rows only, never files.
for (let n = 0; n < 40; n++) {
  const id = ulid()
  const hash = new Bun.CryptoHasher('sha256').update(id).digest('hex')
  const now = new Date()
  await insertImage(app.db, {
    id, page: 'genesis', categoryId: (n % 5) + 1, alt: `Desk ${n} by the window`, caption: n % 2 ? `Caption ${n}` : null, position: n,
    width: 6000, height: 4000, contentHash: hash, originalName: 'photo.jpg', originalBytes: 6_000_000, createdBy: null, now,
  })
  const variants = planVariants(6000, 4000).map((v) => ({ ...v, bytes: 100_000, path: `genesis/${hash}/${v.width}.${v.format === 'jpeg' ? 'jpg' : v.format}` }))
  await app.db.transaction((tx) => replaceVariants(tx, id, variants, now))
}

const url = `${app.url}/spaces/genesis/gallery`
const sample = await fetch(url)
const body = await sample.text()
const headers = Object.fromEntries(sample.headers)
const bare = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(body, { headers }) })
const ceiling = await loadFromChild({ url: `http://127.0.0.1:${bare.port}/spaces/genesis/gallery`, seconds, connections })
const service = await loadFromChild({ url, seconds, connections })
bare.stop(true)

// Uploads back to back while 10 clients read the gallery.
const session = await login(app, (await createAdmin(app)).phone)
const upload = await photo(4240, 2832)
let uploads = 0
let uploading = true
const uploader = (async () => {
  while (uploading) {
    const form = new FormData()
    form.set('file', new File([upload], 'photo.jpg'))
    form.set('page', 'hive')
    form.set('alt', 'A photo')
    const res = await app.fetch('/admin/media', { method: 'POST', headers: bearer(session), body: form })
    await res.arrayBuffer()
    if (res.status === 201) uploads++
  }
})()
await Bun.sleep(500)
const busy = await loadFromChild({ url, seconds: Math.max(seconds, 10), connections: 10 })
uploading = false
await uploader
await app.destroy()

console.log(`GET /spaces/genesis/gallery, 40 images (${body.length} bytes), ${connections} connections, ${seconds} s each, database ${process.env.TEST_DB ?? 'sqlite'}`)
console.log(`  bare Bun.serve (ceiling): ${ceiling.rps} req/s  p50 ${ms(ceiling.p50)}  p99 ${ms(ceiling.p99)}  errors ${ceiling.errors}`)
console.log(`  spaces-api:               ${service.rps} req/s  p50 ${ms(service.p50)}  p99 ${ms(service.p99)}  errors ${service.errors}`)
console.log(`  ratio to ceiling: ${(service.rps / ceiling.rps).toFixed(2)} (goal >= 0.6)`)
console.log(`  during ${uploads} back-to-back 12 MP uploads, 10 connections: ${busy.rps} req/s  p50 ${ms(busy.p50)}  p99 ${ms(busy.p99)}  max ${ms(busy.max)}  errors ${busy.errors} (goal p99 < 50 ms)`)
