/**
 * The built executable as a child process, for the shutdown and fault tests: build once per file,
 * make a seeded data directory, serve it on a random port, log in, upload, read the SQLite file.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { baseEnv, json } from './harness.ts'

const root = resolve(import.meta.dir, '..')
export const PASSWORD = 'a long and unusual seed password'
export const PHONE = '+442079460001'

export interface Instance {
  dir: string
  env: Record<string, string>
}

export interface Server {
  url: string
  child: ReturnType<typeof Bun.spawn>
  log: () => string
  token: string
}

export function createExeHarness(label: string) {
  const work = mkdtempSync(join(tmpdir(), `spaces-${label}-`))
  const exe = join(work, 'spaces-api')
  const children: ReturnType<typeof Bun.spawn>[] = []

  return {
    exe,
    work,
    build() {
      const built = Bun.spawnSync([process.execPath, 'run', 'scripts/build.ts', '--outfile', exe], { cwd: root, stdout: 'pipe', stderr: 'pipe' })
      if (built.exitCode !== 0) throw new Error(`build failed: ${built.stderr.toString()}`)
    },
    /** Kills whatever a failed test left running, then removes the files. */
    cleanup() {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      rmSync(work, { recursive: true, force: true })
    },

    /** A data directory with a migrated, seeded database (SQLite unless `extra` says otherwise). */
    async instance(extra: Record<string, string> = {}): Promise<Instance> {
      const dir = mkdtempSync(join(work, 'i-'))
      const env = {
        PATH: '/usr/bin:/bin',
        ...baseEnv(dir),
        DB_DRIVER: 'sqlite',
        DB_PATH: join(dir, 'data.db'),
        TRUST_PROXY: '127.0.0.1',
        SEED_SUPERADMIN_NAME: 'Owner',
        SEED_SUPERADMIN_PHONE: PHONE,
        SEED_SUPERADMIN_PASSWORD: PASSWORD,
        ...extra,
      }
      // Not spawnSync: the test process may be serving something the command needs (a proxy).
      const seeded = Bun.spawn([exe, 'seed'], { cwd: dir, env, stdout: 'pipe', stderr: 'pipe' })
      if ((await seeded.exited) !== 0) throw new Error(`seed failed: ${await new Response(seeded.stderr).text()}`)
      return { dir, env }
    },

    /** `serve` on a random port, up and answering, with an admin signed in. */
    async serve(at: Instance): Promise<Server> {
      const port = 20000 + Math.floor(Math.random() * 30000)
      const child = Bun.spawn([exe, 'serve'], { cwd: at.dir, env: { ...at.env, PORT: String(port) }, stdout: 'pipe', stderr: 'pipe' })
      children.push(child)
      let out = ''
      void (async () => {
        for await (const chunk of child.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(chunk)
      })()
      const url = `http://127.0.0.1:${port}`
      for (let i = 0; i < 100; i++) {
        if ((await fetch(`${url}/health`).then((r) => r.status, () => 0)) === 200) break
        await Bun.sleep(50)
      }
      const login = await fetch(`${url}/admin/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ phone: PHONE, password: PASSWORD }) })
      const session = await json(login)
      if (!session.accessToken) throw new Error(`login failed: ${JSON.stringify(session)}\n${out}`)
      return { url, child, log: () => out, token: session.accessToken }
    },
  }
}

export function uploadTo(server: Server, file: Uint8Array, n = 0) {
  const form = new FormData()
  form.set('file', new File([file], `photo-${n}.jpg`))
  form.set('page', 'genesis')
  form.set('alt', `Photo ${n}`)
  return fetch(`${server.url}/admin/media`, { method: 'POST', headers: { authorization: `Bearer ${server.token}` }, body: form })
}

/** Rows from an instance's SQLite file, read beside the running server. */
export function query(at: Instance, sql: string): Record<string, unknown>[] {
  const db = new Database(at.env.DB_PATH!, { readonly: true })
  try {
    return db.query(sql).all() as Record<string, unknown>[]
  } finally {
    db.close()
  }
}

export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(25)
  }
}
