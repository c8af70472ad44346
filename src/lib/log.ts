import pino, { type DestinationStream, type Level } from 'pino'

// Keys whose values must never reach a log line (decision 34), wherever they sit in a logged object.
const REDACT = [
  'password', 'currentPassword', 'newPassword', 'token', 'accessToken', 'refreshToken',
  'authorization', 'cookie', 'secret', 'ip',
  '*.password', '*.currentPassword', '*.newPassword', '*.token', '*.accessToken', '*.refreshToken',
  '*.authorization', '*.cookie', '*.secret', '*.ip',
]

function create(level: Level | 'silent', destination?: DestinationStream) {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT, censor: '[redacted]' },
    },
    destination ?? pino.destination({ fd: 1, sync: true }),
  )
}

export type Log = ReturnType<typeof create>

/** The process-wide JSON-lines logger; `configureLog` sets its level (and, in tests, where it writes). */
export let log: Log = create('info')

export function configureLog(level: Level | 'silent', destination?: DestinationStream): Log {
  log = create(level, destination)
  return log
}
