import type { SchemaOptions, TLiteral, TObject, TUnion } from '@sinclair/typebox'
import { t } from 'elysia'
import { NotFound } from './errors.ts'

/** `page` and `perPage` of every admin list (limits: perPage 1-100, default 20; page default 1). */
export const Paging = {
  page: t.Optional(t.Integer({ minimum: 1, maximum: 1_000_000 })),
  perPage: t.Optional(t.Integer({ minimum: 1, maximum: 100 })),
}

export const Meta = t.Object({ page: t.Integer(), perPage: t.Integer(), total: t.Integer() }, { title: 'Meta' })

/** The defaults of `Paging` applied: what a list query and its `meta` use. */
export function paging(query: { page?: number; perPage?: number }): { page: number; perPage: number } {
  return { page: query.page ?? 1, perPage: query.perPage ?? 20 }
}

// No length limit here: a malformed id is a 404 (decision 32), decided by `isUlid` in the route.
export const IdParams = t.Object({ id: t.String() })

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/

/** Ids are ULIDs; anything else cannot exist and never reaches the database (decision 32). */
export function isUlid(id: string): boolean {
  return ULID.test(id)
}

/** The row `find` returns for a well-formed id, else a 404 saying `missing`. */
export async function findOr404<T>(id: string, find: (id: string) => Promise<T | undefined>, missing: string): Promise<T> {
  const found = isUlid(id) ? await find(id) : undefined
  if (found === undefined) throw new NotFound(missing)
  return found
}

/**
 * A union of string literals. Not `t.UnionEnum`: Elysia fills a missing UnionEnum property with
 * its first value, so an optional filter would silently filter and a required field never fail.
 */
export function oneOf<const T extends string[]>(values: T, options?: SchemaOptions): TUnion<{ [K in keyof T]: TLiteral<T[K]> }> {
  return t.Union(values.map((v) => t.Literal(v)), options) as never
}

// Unsafe only restates the type: inside Elysia's route types an optional Record would become `{}`.
const Fields = t.Unsafe<Record<string, string>>(t.Record(t.String(), t.String(), { description: 'Offending input keys, each with what is wrong' }))

/** The envelope http/errors.ts gives every error, except those of `POST /enquiries`. */
export const ErrorBody = t.Object({ error: t.String(), requestId: t.String(), fields: t.Optional(Fields) }, { title: 'ErrorBody' })

/** The envelope of `POST /enquiries` errors: the failure side of its `ok`-discriminated body. */
export const OkErrorBody = t.Object({ ok: t.Literal(false), error: t.String(), fields: t.Optional(Fields) }, { title: 'OkErrorBody' })

/** What each error status means in this API (api.md, Errors); the document shows it per response. */
const MEANING = {
  400: 'Malformed request: bad JSON or a failed schema (`fields` names the keys), or a rule of the route refused it',
  401: 'Missing, invalid or expired credentials',
  403: 'Authenticated but not allowed',
  404: 'No such resource',
  408: 'The request body took longer than BODY_TIMEOUT to arrive',
  413: 'Request body too large',
  422: 'Semantic failure (`fields` names the keys)',
  429: 'Rate limited; `Retry-After` gives the seconds to wait',
  500: 'Unexpected failure; the detail is only in the server log, under the request id',
  503: 'Temporarily unavailable (the database out of reach, the server restarting, a queue full); try again after `Retry-After`',
  507: 'Not enough disk space; nothing was kept',
} as const
export type ErrorStatus = keyof typeof MEANING
const ALWAYS = [500, 503] as const
type Always = (typeof ALWAYS)[number]

function responses<S extends TObject>(envelope: S, statuses: ErrorStatus[]): Record<number, S> {
  const out: Record<number, S> = {}
  for (const status of [...statuses, ...ALWAYS]) out[status] = t.Object(envelope.properties, { title: envelope.title, description: MEANING[status] }) as S
  return out
}

/**
 * Response schemas for a route's error statuses, each the error envelope; 500 and 503 are always
 * added, since any route may fail unexpectedly or lose its database. Elysia never checks the
 * formatter's bodies against these (only what a handler returns): they document what it answers.
 */
export const errors = <const S extends ErrorStatus[]>(...statuses: S) => responses(ErrorBody, statuses) as { [K in S[number] | Always]: typeof ErrorBody }

/** As `errors`, with the `{ ok: false }` envelope of `POST /enquiries`. */
export const okErrors = <const S extends ErrorStatus[]>(...statuses: S) => responses(OkErrorBody, statuses) as { [K in S[number] | Always]: typeof OkErrorBody }

/** The errors any route with a JSON body may answer, before its handler runs (http/body.ts). */
export const BODY_ERRORS = [400, 408, 413] as const
