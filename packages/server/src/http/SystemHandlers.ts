/** Liveness, readiness and the OpenAPI document. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { openApiDocument } from "./OpenApiDocument.ts"

export const SystemHandlers = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const document = openApiDocument()
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handleRaw("readyz", () =>
        sql`SELECT 1 FROM effect_sql_migrations LIMIT 1`.pipe(
          Effect.as(HttpServerResponse.unsafeJson({ status: "ready", database: "ok" })),
          Effect.catchAllCause(() =>
            Effect.succeed(HttpServerResponse.unsafeJson(
              { error: { code: "internal", message: "not ready: the database does not answer" } },
              { status: 503 }
            ))
          )
        ))
      .handle("openapi", () => Effect.succeed(document))
  }))
