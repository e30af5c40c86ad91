/**
 * After an apply, the warehouse copy of what it touched is brought up to date from the upstream's own answers,
 * so reads and the next proposal's validation see the change without waiting for a sync. The writes are one
 * function in the database (migration 0021), so the write-back is one call: a statement of its own behind the
 * lease, or part of the statement that ends the run.
 */
import type { SqlClient } from "@effect/sql"
import type { Touched } from "../actions/kinds/Kind.ts"

/** The call, for a statement's select list: `SELECT ${writeBackCall(...)} FROM lease`. */
export const writeBackCall = (sql: SqlClient.SqlClient, projectId: string, touched: Touched) =>
  sql`acs_write_back(${projectId}, ${JSON.stringify(touched)}::jsonb)`
