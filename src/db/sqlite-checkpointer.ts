/**
 * Runs SQLite's WAL checkpoints on a thread of its own (see sqlite.ts): the main thread's
 * connection never checkpoints, so a commit never stalls requests while the WAL is copied back.
 */
import { Database } from 'bun:sqlite'

declare const self: Worker

const EVERY_MS = 200

self.onmessage = (event: MessageEvent<{ path: string }>) => {
  const db = new Database(event.data.path)
  db.exec('PRAGMA busy_timeout = 1000')
  setInterval(() => {
    try {
      // PASSIVE: copies what it can without waiting on the writer or any reader.
      db.exec('PRAGMA wal_checkpoint(PASSIVE)')
    } catch {
      // busy: the next round tries again
    }
  }, EVERY_MS)
  self.postMessage('ready')
}
