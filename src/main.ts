#!/usr/bin/env bun
import { loadConfig, ConfigError, type Config } from './config.ts'
import { buildSha, buildVersion } from './build-info.ts'
import { configureLog } from './lib/log.ts'

const USAGE = `spaces-api ${buildVersion}

Usage: spaces-api [command] [options]

Commands:
  serve              apply pending migrations, then serve HTTP on PORT (default command)
  migrate            apply pending migrations and exit
  seed               create the first superadmin from SEED_SUPERADMIN_* (once)
  gc [--dry-run]     hard-delete images soft-deleted over 30 days ago and unreferenced files
  reprocess [--gc]   regenerate the derivatives of every live image from its original
  doctor             check configuration, database and image encoding on this host

Options:
  --help, -h         show this help
  --version, -v      show the version and build (GIT_SHA)

Configuration comes from environment variables (and a .env file in the working directory);
see the README for the list.`

type Command = (config: Config, args: string[]) => Promise<number>

const COMMANDS: Record<string, { flags: string[]; load: () => Promise<Command> }> = {
  serve: { flags: [], load: async () => (await import('./commands/serve.ts')).run },
  migrate: { flags: [], load: async () => (await import('./commands/migrate.ts')).run },
  seed: { flags: [], load: async () => (await import('./commands/seed.ts')).run },
  gc: { flags: ['--dry-run'], load: async () => (await import('./commands/gc.ts')).run },
  reprocess: { flags: ['--gc'], load: async () => (await import('./commands/reprocess.ts')).run },
  doctor: { flags: [], load: async () => (await import('./commands/doctor.ts')).run },
}

export async function main(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE)
    return 0
  }
  if (argv.includes('--version') || argv.includes('-v')) {
    console.log(`spaces-api ${buildVersion} (${env.GIT_SHA || buildSha})`)
    return 0
  }
  const [name = 'serve', ...args] = argv
  const command = COMMANDS[name]
  if (!command) {
    console.error(`spaces-api: unknown command "${name}"\n\n${USAGE}`)
    return 1
  }
  const unknown = args.filter((a) => !command.flags.includes(a))
  if (unknown.length > 0) {
    console.error(`spaces-api ${name}: unknown option ${unknown.map((a) => `"${a}"`).join(', ')}; see --help`)
    return 1
  }

  let config: Config
  try {
    config = loadConfig(env, buildSha)
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    console.error(`spaces-api: invalid configuration (${error.problems.length} problem${error.problems.length === 1 ? '' : 's'}):`)
    for (const problem of error.problems) console.error(`  ${problem}`)
    return 1
  }
  configureLog(config.logLevel)
  return (await command.load())(config, args)
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2), process.env)
  // `serve` keeps running; every other command ends here.
  if (code !== -1) process.exit(code)
}
