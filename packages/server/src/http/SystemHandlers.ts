/** Liveness, readiness and the OpenAPI document. */
import { Api } from "@acs/domain/Api"
import { Internal } from "@acs/domain/Errors"
import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { openApiDocument } from "./OpenApiDocument.ts"

export const SystemHandlers = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const document = openApiDocument()
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("readyz", () =>
        sql`SELECT 1 FROM effect_sql_migrations LIMIT 1`.pipe(
          Effect.as({ status: "ready" as const, database: "ok" as const }),
          Effect.catchAllCause(() => Effect.fail(new Internal({ message: "not ready: the database does not answer" })))
        ))
      .handle("openapi", () => Effect.succeed(document))
  }))
