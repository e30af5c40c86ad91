/**
 * A table's row is declared once, as a Schema.Struct in camelCase (the client turns the columns' snake_case
 * names into it: Database.ts); its select list, its decoder and its snake-case form (the keys of a row read
 * without the client's name transform) are derived from that declaration, never restated
 * (docs/decisions/architecture.md "One owner per table").
 */
import { Effect, Schema, String as Str } from "effect"

/** The struct's fields as a select list of their columns, in declaration order: `project_id, org_id, …`. */
export const columnsOf = (row: { readonly fields: Schema.Struct.Fields }, alias?: string): string =>
  Object.keys(row.fields).map((field) => `${alias === undefined ? "" : `${alias}.`}${Str.camelToSnake(field)}`).join(", ")

/** Decodes a statement's rows with the row's schema: a row that does not match is a defect (the schema and the table disagree). */
export const decodeRows = <A, I>(row: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(Schema.Array(row))
  return (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>> => Effect.orDie(decode(rows))
}

/**
 * `Str.snakeToCamel`, the client's name transform (Database.ts), without building a new string, character by
 * character, for a name with no `_` past its first character: the same result, for every column and every key of
 * the JSON values a statement answers (a changeset's 1,000 member payloads), already camelCase for the most part.
 */
export const camelName = (name: string): string => name.length > 0 && name.indexOf("_", 1) < 0 ? name : Str.snakeToCamel(name)

const decodeCounts = decodeRows(Schema.Struct({ n: Schema.Int }))

/** The number a `SELECT count(*)::int AS n …` answers (0 for no row). */
export const countOf = (rows: ReadonlyArray<unknown>): Effect.Effect<number> =>
  Effect.map(decodeCounts(rows), (counted) => counted[0]?.n ?? 0)

/** `createdAtIso` -> `created_at_iso`, as a type (the inverse of the client's `snakeToCamel` for these names). */
export type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}`
  : S

/** A row as the driver answers it without the name transform: the same values under snake-case keys. */
export type SnakeRow<Row> = { readonly [K in keyof Row & string as SnakeCase<K>]: Row[K] }

/**
 * The select list of a row's fields, in their declared order: each field's snake-case column, or, for a field
 * of `computed`, its expression `AS` that name. Built once, as text (the names are the schema's, not input).
 */
export const selectList = <Fields extends Schema.Struct.Fields>(
  fields: Fields,
  computed: { readonly [K in keyof Fields]?: string } = {}
): string =>
  Object.keys(fields).map((field) => {
    const expression = computed[field as keyof Fields]
    return expression === undefined ? Str.camelToSnake(field) : `${expression} AS ${Str.camelToSnake(field)}`
  }).join(", ")

/**
 * A row of `alias` as one JSON value whose keys are the fields (for a statement that reads it beside other
 * things): each field's snake-case column, or its expression in `computed`; null when the row is absent (its
 * `presence` column is null, as after a LEFT JOIN that found none).
 */
export const jsonRow = <Fields extends Schema.Struct.Fields>(
  alias: string,
  fields: Fields,
  presence: string,
  computed: { readonly [K in keyof Fields]?: string } = {}
): string =>
  `CASE WHEN ${alias}.${presence} IS NULL THEN NULL ELSE json_build_object(${
    Object.keys(fields).map((field) => `'${field}', ${computed[field as keyof Fields] ?? `${alias}.${Str.camelToSnake(field)}`}`).join(", ")
  }) END`
