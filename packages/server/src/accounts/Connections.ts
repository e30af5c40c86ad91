/** The org's upstream connection as stored; credentials stay encrypted and never leave the server. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Granted } from "../auth/Access.ts"

interface ConnectionRow {
  readonly provider: "apple" | "simulator"
  readonly upstreamOrgId: string | null
  readonly status: "ok" | "error"
  readonly error: string | null
  readonly checkedAt: string | null
}

export class Connections extends Effect.Service<Connections>()("acs/Connections", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const get = (grant: Granted<"getConnection">) =>
      sql<ConnectionRow>`SELECT provider, upstream_org_id, status, error, checked_at FROM connections WHERE org_id = ${grant.orgId}`
        .pipe(
          Effect.map((rows) => {
            const row = rows[0]
            return row === undefined
              ? { connected: false, provider: null, status: "not_connected" as const, upstreamOrgId: null, checkedAt: null, error: null }
              : {
                connected: row.status === "ok",
                provider: row.provider,
                status: row.status,
                upstreamOrgId: row.upstreamOrgId,
                checkedAt: row.checkedAt === null ? null : new Date(row.checkedAt).toISOString(),
                error: row.error
              }
          }),
          Effect.orDie,
          Effect.withSpan("Connections.get")
        )

    return { get } as const
  })
}) {}
