/** Liveness, readiness and the OpenAPI document. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"
import { databaseUnavailable } from "../db/DatabaseOutage.ts"
import { openApiDocument } from "./OpenApiDocument.ts"

/** A readiness probe answers within this, whatever the database does (a hung connection is not ready). */
const READY_TIMEOUT = Duration.seconds(5)

export const SystemHandlers = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const document = openApiDocument()
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("readyz", () =>
        sql`SELECT 1 FROM effect_sql_migrations LIMIT 1`.pipe(
          Effect.timeoutFail({ duration: READY_TIMEOUT, onTimeout: () => databaseUnavailable }),
          Effect.as({ status: "ready" as const, database: "ok" as const }),
          // Whatever stops the database answering, the instance is not ready: 503 and Retry-After, never 500.
          Effect.catchAllCause(() => Effect.fail(databaseUnavailable))
        ))
      .handle("openapi", () => Effect.succeed(document))
  }))
