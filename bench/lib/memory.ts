import { heapStats } from 'bun:jsc'
import { readFileSync } from 'node:fs'

/** This process's memory in MB: resident (anonymous and file-backed parts) and the JS heap. */
export interface Memory {
  rss: number
  anon: number
  file: number
  heap: number
}

/** Reads /proc/self/status after a full GC (Linux). */
export function memory(): Memory {
  Bun.gc(true)
  const status = readFileSync('/proc/self/status', 'utf8')
  const mb = (field: string) => Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024)
  return { rss: mb('VmRSS'), anon: mb('RssAnon'), file: mb('RssFile'), heap: Math.round(heapStats().heapSize / 2 ** 20) }
}
