/**
 * Property-based fuzzing of every route (issue 6, item 3). Each route group is one fast-check
 * property; each run sends one request made from the route's schemas (test/fuzz/routes.ts), mostly
 * valid so that the handlers run, mutated at every level, with random and adversarial bodies,
 * queries, path ids and headers. Every response must hold the invariants of test/fuzz/invariants.ts:
 * no 5xx, the documented JSON envelope, no internals, and a rejected write changes no row.
 *
 * FUZZ_RUNS=<n> sets the runs of every property (default: a budget under two minutes in all);
 * FUZZ_SEED=<n> varies the otherwise fixed seed; FUZZ_VERBOSE=1 prints the statuses per route.
 */
import { afterAll, beforeAll, describe, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { resolve, type AuthKind, type Body, type World } from './fuzz/arbitraries.ts'
import { noteSent, responseProblems, snapshot, snapshotDiff, type Sent } from './fuzz/invariants.ts'
import { byName, GROUPS, requestFor, STRAY, STRAY_METHODS, type FuzzRequest } from './fuzz/routes.ts'
import { createFuzzWorld, SECRET } from './fuzz/world.ts'
import { startApp, type TestApp } from './harness.ts'

const SEED = Number(process.env.FUZZ_SEED ?? 20261122)
const RUNS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : undefined
const VERBOSE = process.env.FUZZ_VERBOSE === '1'
/** FUZZ_TRACE=<part of a route name>: print each request of the matching routes and its answer. */
const TRACE = process.env.FUZZ_TRACE

let app: TestApp
let requests = 0
const failures: string[] = []
const statuses = new Map<string, Map<number, number>>()
const seen = new Set<string>()
const started = performance.now()
const fuzz = createFuzzWorld()

// ---- Sending one request and checking its response ----

async function encode(body: Body, w: World, headers: Record<string, string>): Promise<{ init?: RequestInit['body']; text: string }> {
  switch (body.kind) {
    case 'none':
      return { text: '' }
    case 'json': {
      const text = JSON.stringify(await resolve(body.value, w)) ?? ''
      headers['content-type'] = body.type
      return { init: text, text }
    }
    case 'text':
      if (body.type !== null) headers['content-type'] = body.type
      return { init: body.type === null ? new TextEncoder().encode(body.text) : body.text, text: body.text }
    case 'bytes': {
      const bytes = (await resolve(body.bytes, w)) as Uint8Array
      if (body.type !== null) headers['content-type'] = body.type
      return { init: bytes, text: Buffer.from(bytes.subarray(0, 200_000)).toString('latin1') }
    }
    case 'stream': {
      const bytes = new TextEncoder().encode(body.text)
      headers['content-type'] = body.type
      let at = 0
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (at >= bytes.length) return controller.close()
          controller.enqueue(bytes.subarray(at, (at += body.chunk)))
        },
      })
      return { init: stream, text: body.text }
    }
    case 'form': {
      const form = new FormData()
      const texts: string[] = []
      for (const part of body.parts) {
        if ('value' in part) {
          form.append(part.name, part.value)
          texts.push(part.name, part.value)
        } else {
          form.append(part.name, new File([(await resolve(part.file, w)) as Uint8Array], part.filename, { type: part.type }))
          texts.push(part.name, part.filename, part.type)
        }
      }
      if (body.type) headers['content-type'] = body.type
      return { init: form, text: texts.join('\n') }
    }
  }
}

const decoded = (s: string) => {
  try {
    return decodeURIComponent(s.replaceAll('+', ' '))
  } catch {
    return s
  }
}

async function send(req: FuzzRequest & { method?: string }) {
  const w = fuzz.read()
  const path = byName.get(req.route)!.path(String(await resolve(req.id, w)))
  // A `.`/`..` segment (also as %2e) is resolved by the URL parser, so the request reaches another
  // route, or none: it is then held to what any stray request must do.
  const route = path.split('/').some((segment) => /^(?:\.|%2e){1,2}$/i.test(segment)) ? STRAY : byName.get(req.route)!
  const method = req.method ?? byName.get(req.route)!.method
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(req.headers)) {
    const v = await resolve(value, w)
    if (typeof v === 'string') headers[name] = v
  }
  if (req.xff !== undefined) headers['x-forwarded-for'] = req.xff
  const authorization = w.authHeader(req.auth)
  if (authorization) headers.authorization = authorization
  if (method === 'OPTIONS') headers['access-control-request-method'] ??= 'POST'
  const body = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method) ? await encode(req.body, w, headers) : { text: '' }
  // As the server sees it: dot segments resolved and (Bun) a doubled leading slash collapsed.
  const served = new URL(app.url + path).pathname.replace(/^\/+/, '/')
  const sent: Sent = {
    method,
    text: [path, decoded(path), req.query, decoded(req.query), ...Object.values(headers), body.text].join('\n'),
    origin: headers.origin ?? null,
    corsOrigins: served === '/admin' || served.startsWith('/admin/') ? app.config.cors.adminOrigins : served === '/enquiries' || served.startsWith('/spaces/') ? app.config.cors.publicOrigins : undefined,
  }
  noteSent(sent.text, seen)

  const upload = route.name === 'POST /admin/media'
  const before = route.tables ? await snapshot(app.db, route.tables) : undefined
  const filesBefore = upload ? storedFiles() : undefined
  const mailsBefore = fuzz.mails.length
  let res: Response
  let bytes: Uint8Array
  try {
    res = await fetch(app.url + path + (req.query ? `?${req.query}` : ''), { method, headers, body: body.init, redirect: 'manual', signal: AbortSignal.timeout(20_000) })
    bytes = new Uint8Array(await res.arrayBuffer())
  } catch (error) {
    requests++
    return fail(req.route, [`no response: ${(error as Error).message}`], 0, '')
  }
  requests++
  const perRoute = statuses.get(req.route) ?? new Map<number, number>()
  perRoute.set(res.status, (perRoute.get(res.status) ?? 0) + 1)
  statuses.set(req.route, perRoute)

  const secrets = [SECRET, app.dir, app.config.auth.accessSecret!, app.config.auth.refreshSecret!, app.config.ipHashSalt!]
  const problems = responseProblems(route.expect, sent, res, bytes, seen, secrets)
  const text = new TextDecoder().decode(bytes)
  if (TRACE && req.route.includes(TRACE)) console.log(`${method} ${path.slice(0, 80)} [${req.auth}] ${body.text.slice(0, 120)} -> ${res.status} ${text.slice(0, 160)}`)
  problems.push(...authProblems(route.auth, req.auth, res.status, text, route === STRAY))
  if (before && res.status >= 400) problems.push(...snapshotDiff(before, await snapshot(app.db, route.tables!), route.allowance?.(res.status)))
  if (upload) {
    const left = readdirSync(join(app.config.media.storageRoot, 'tmp')).length
    if (left > 0) problems.push(`${left} file(s) left in STORAGE_ROOT/tmp`)
    // A refused upload leaves no derivative and no original behind either.
    const added = res.status >= 400 ? storedFiles().filter((f) => !filesBefore!.includes(f)) : []
    if (added.length > 0) problems.push(`a refused upload left files: ${added.slice(0, 3).join(', ')}`)
  }
  if (problems.length > 0) return fail(`${method} ${path.slice(0, 200)}`, problems, res.status, text)

  // A fuzzed request ended a fixture session (it should not: their ids are kept out of the pools).
  if ((req.auth === 'superadmin' || req.auth === 'admin') && res.status === 401 && route !== STRAY && route.auth !== 'public') fuzz.sessionLost()
  await fuzz.observe(route.name, res, headers, mailsBefore, body.text)
}

/** Every entry under MEDIA_ROOT and STORAGE_ROOT/originals (symlinks listed, not followed). */
function storedFiles(): string[] {
  const walk = (dir: string): string[] =>
    existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((e) => [join(dir, e.name), ...(e.isDirectory() ? walk(join(dir, e.name)) : [])]) : []
  return [...walk(app.config.media.root), ...walk(join(app.config.media.storageRoot, 'originals'))]
}

/** A valid token must get past the guard; a missing or wrong one must be stopped by it (401, 403). */
function authProblems(routeAuth: string, kind: AuthKind, status: number, text: string, stray: boolean): string[] {
  if (routeAuth === 'public' || stray) return []
  const required = kind !== 'superadmin' && kind !== 'admin' ? 401 : routeAuth === 'superadmin' && kind === 'admin' ? 403 : undefined
  if (required === undefined || status === required || status === 413) return []
  // A body that cannot be parsed is refused before any route hook runs.
  if (status === 400 && !text.includes('"fields"')) return []
  return [`with a ${kind} token: ${status}, expected ${required}`]
}

function fail(where: string, problems: string[], status: number, text: string): never {
  const message = `${where} -> ${status}: ${problems.join('; ')}\n  body: ${text.slice(0, 400)}`
  failures.push(message)
  throw new Error(message)
}

beforeAll(async () => {
  app = await startApp({ env: { TRUST_PROXY: '127.0.0.1' }, mailer: fuzz.mailer })
  await fuzz.prepare(app)
}, 60_000)

afterAll(async () => {
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  if (VERBOSE) {
    for (const [route, counts] of [...statuses].sort()) console.log(`  ${route.padEnd(36)} ${[...counts].sort(([a], [b]) => a - b).map(([s, n]) => `${s}:${n}`).join(' ')}`)
    console.log(`  fixture sessions lost: ${fuzz.sessionsLost}`)
  }
  console.log(`fuzz: ${requests} requests, ${failures.length} violations (seed ${SEED}, ${seconds} s)`)
  await app?.destroy()
})

describe('fuzzing every route from its schema', () => {
  GROUPS.forEach((group, index) => {
    const numRuns = RUNS ?? group.runs
    test(
      `${group.name} answer any input within the contract`,
      async () => {
        const arbitraries = group.routes.map(([name, weight]) => ({ weight, arbitrary: requestFor(byName.get(name)!) }))
        if (group.stray) arbitraries.push({ weight: 3, arbitrary: requestFor(STRAY, fc.constantFrom(...STRAY_METHODS)) })
        await fc.assert(
          fc.asyncProperty(fc.oneof(...arbitraries), async (req) => {
            await fuzz.ensureSessions()
            await send(req)
          }),
          { numRuns, seed: SEED + index, verbose: 1 },
        )
      },
      Math.max(120_000, numRuns * 500),
    )
  })
})
