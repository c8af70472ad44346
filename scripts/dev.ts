/**
 * Development mode: SQLite under ./data, development secrets generated once into
 * ./data/dev-secrets.env (mode 600), local media served, e-mail written to the log, and a superadmin
 * seeded on the first start with a random password printed once. Any variable already set in the
 * environment wins over these defaults.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const root = resolve(import.meta.dir, '..')
const data = join(root, 'data')
mkdirSync(data, { recursive: true, mode: 0o700 })

const random = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('base64url')

const secretsFile = join(data, 'dev-secrets.env')
if (!existsSync(secretsFile)) {
  const lines = [
    '# Generated for development by scripts/dev.ts; never use these in production.',
    `JWT_ACCESS_SECRET=${random(48)}`,
    `JWT_REFRESH_SECRET=${random(48)}`,
    `IP_HASH_SALT=${random(24)}`,
  ]
  writeFileSync(secretsFile, `${lines.join('\n')}\n`, { mode: 0o600 })
}
const secrets = Object.fromEntries(
  readFileSync(secretsFile, 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
)

const port = process.env.PORT ?? '3000'
const env: Record<string, string | undefined> = {
  NODE_ENV: 'development',
  DB_DRIVER: 'sqlite',
  DB_PATH: join(data, 'spaces.db'),
  PORT: port,
  PUBLIC_ORIGINS: 'http://localhost:4321,http://localhost:5173',
  ADMIN_ORIGINS: 'http://localhost:5174',
  ADMIN_PORTAL_URL: 'http://localhost:5174',
  ASSET_BASE_URL: `http://localhost:${port}/media`,
  MEDIA_ROOT: join(data, 'media'),
  STORAGE_ROOT: join(data, 'storage'),
  SERVE_MEDIA: 'true',
  ...secrets,
  ...process.env,
}

const main = join(root, 'src/main.ts')
const run = (command: string, extra: Record<string, string> = {}) =>
  Bun.spawnSync([process.execPath, main, command], { cwd: root, env: { ...env, ...extra }, stdout: 'pipe', stderr: 'inherit' })

const migrated = run('migrate')
process.stdout.write(migrated.stdout)
if (migrated.exitCode !== 0) process.exit(migrated.exitCode ?? 1)

const password = random(18)
const seeded = run('seed', {
  SEED_SUPERADMIN_NAME: env.SEED_SUPERADMIN_NAME ?? 'Development Admin',
  SEED_SUPERADMIN_PHONE: env.SEED_SUPERADMIN_PHONE ?? '+442079460001',
  SEED_SUPERADMIN_EMAIL: env.SEED_SUPERADMIN_EMAIL ?? 'admin@example.com',
  SEED_SUPERADMIN_PASSWORD: env.SEED_SUPERADMIN_PASSWORD ?? password,
})
process.stdout.write(seeded.stdout)
if (seeded.exitCode === 0 && seeded.stdout.toString().includes('created') && !env.SEED_SUPERADMIN_PASSWORD) {
  console.log(`\n  Superadmin password (shown once, keep it): ${password}\n`)
}

console.log(`spaces-api (development) on http://localhost:${port}  health: http://localhost:${port}/health`)
const server = Bun.spawn([process.execPath, main, 'serve'], { cwd: root, env, stdio: ['inherit', 'inherit', 'inherit'] })
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.kill(signal))
process.exit(await server.exited)
