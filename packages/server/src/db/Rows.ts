/**
 * A table's row is declared once, as a Schema.Struct in camelCase (the client turns the columns' snake_case
 * names into it: Database.ts); its select list and its decoder are derived from that declaration, never
 * restated (docs/decisions/architecture.md "One owner per table").
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
