import type { SchemaOptions, TLiteral, TUnion } from '@sinclair/typebox'
import { t } from 'elysia'

/** `page` and `perPage` of every admin list (limits: perPage 1-100, default 20; page default 1). */
export const Paging = {
  page: t.Optional(t.Integer({ minimum: 1, maximum: 1_000_000 })),
  perPage: t.Optional(t.Integer({ minimum: 1, maximum: 100 })),
}

export const Meta = t.Object({ page: t.Integer(), perPage: t.Integer(), total: t.Integer() })

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

/**
 * A union of string literals. Not `t.UnionEnum`: Elysia fills a missing UnionEnum property with
 * its first value, so an optional filter would silently filter and a required field never fail.
 */
export function oneOf<const T extends string[]>(values: T, options?: SchemaOptions): TUnion<{ [K in keyof T]: TLiteral<T[K]> }> {
  return t.Union(values.map((v) => t.Literal(v)), options) as never
}
