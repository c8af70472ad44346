/**
 * Dependency hygiene, run by .ci/run: fails when an installed dependency is below its known-fixed
 * version, or when `bun audit` reports a high or critical advisory.
 *
 *   bun run scripts/check-deps.ts
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/** Versions that fixed published vulnerabilities (issue 6); the installed one must be at least this. */
const FLOORS: Record<string, string> = {
  elysia: '1.4.28',
  mysql2: '3.9.8',
  nodemailer: '7.0.11',
  sharp: '0.32.6',
}

const root = join(import.meta.dir, '..')

/** Numeric comparison of major.minor.patch (pre-release tags ignored). */
export function compare(a: string, b: string): number {
  const pa = a.split(/[.+-]/).slice(0, 3).map(Number)
  const pb = b.split(/[.+-]/).slice(0, 3).map(Number)
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0)
  return 0
}

if (import.meta.main) {
  let failures = 0
  for (const [name, floor] of Object.entries(FLOORS)) {
    const installed = (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version
    const ok = compare(installed, floor) >= 0
    if (!ok) failures++
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name} ${installed} (known-fixed ${floor})`)
  }

  const audit = Bun.spawnSync([process.execPath, 'audit', '--json'], { cwd: root, stdout: 'pipe', stderr: 'pipe' })
  const out = audit.stdout.toString().trim()
  const err = audit.stderr.toString().trim()
  if (/advisories\/bulk - \d+|ENOTFOUND|ECONNREFUSED|fetch failed/.test(err) && !out) {
    // The advisory service is not reachable from every network (this one answers 405): say so plainly
    // rather than fail every build on it or pretend the audit passed.
    console.log(`warn audit: the advisory service could not be reached (${err.split('\n')[0]}); floors above still checked`)
  } else {
    let report: Record<string, { severity?: string; title?: string }[]> = {}
    try {
      report = out ? JSON.parse(out) : {}
    } catch {
      console.log(`FAIL audit: unreadable output: ${(out || err).slice(0, 200)}`)
      failures++
    }
    const serious = Object.entries(report).flatMap(([pkg, list]) =>
      (Array.isArray(list) ? list : []).filter((a) => a.severity === 'high' || a.severity === 'critical').map((a) => `${pkg}: ${a.severity} ${a.title ?? ''}`),
    )
    for (const line of serious) console.log(`FAIL audit ${line}`)
    failures += serious.length
    if (serious.length === 0 && failures === 0) console.log('ok   audit: no high or critical advisory')
  }

  console.log(`check-deps: ${failures === 0 ? 'passed' : `${failures} problem(s)`}`)
  process.exit(failures === 0 ? 0 : 1)
}
