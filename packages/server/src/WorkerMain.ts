/**
 * The background work as a process of its own (`acs worker`): the apply workers and the webhook delivery
 * workers (woken by the API's sequencer), and nothing else — no HTTP server, no /readyz, no migrations run, no demo import, no
 * change-history poll. API processes started with `WORKER_CONCURRENCY=0` and `WEBHOOK_CONCURRENCY=0` only
 * enqueue, so proposals share their thread with neither applies nor deliveries. It needs PostgreSQL
 * (DATABASE_URL: the embedded database serves one process) at the migration this build expects, and the
 * same ACS_SECRETS_KEY as the API (the upstream credentials are stored encrypted). SIGTERM lets the job in
 * hand finish, within SHUTDOWN_TIMEOUT_MS.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Logger, LogLevel, Option, Schema } from "effect"
import { ServicesLive } from "./AppLayer.ts"
import { DatabaseMode, databaseLayer } from "./db/Database.ts"
import { migrationCount } from "./db/Migrations.ts"
import { logLevelConfig } from "./LogLevelConfig.ts"
import { armShutdownDeadline } from "./ShutdownDeadline.ts"
import { MetricsPortLive } from "./telemetry/MetricsExposition.ts"
import { withTracing } from "./telemetry/Tracing.ts"
import { EventWakeLive } from "./events/Sequencer.ts"
import { WebhookWorkerLive } from "./webhooks/WebhookWorker.ts"
import { WorkerLive } from "./worker/Worker.ts"
import { decodeRows } from "./db/Rows.ts"

const decodeLatest = decodeRows(Schema.Struct({ latest: Schema.NullOr(Schema.Number) }))

/** Refuses to start on a database the API has not migrated to this build's schema yet. */
const requireMigrated = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT max(migration_id)::int AS latest FROM effect_sql_migrations`.pipe(
    Effect.flatMap(decodeLatest),
    Effect.catchAll(() => Effect.succeed([{ latest: null }]))
  )
  const latest = rows[0]?.latest ?? 0
  if (latest < migrationCount) {
    return yield* Effect.dieMessage(
      `the database is at migration ${latest} and this worker needs ${migrationCount}: start an API process (it migrates) or run \`acs migrate\` first`
    )
  }
})

const WorkerDatabaseLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    if (Option.isNone(yield* DatabaseMode)) {
      return yield* Effect.dieMessage("acs worker needs DATABASE_URL: the embedded database serves a single process")
    }
    return Layer.effectDiscard(requireMigrated).pipe(Layer.provideMerge(databaseLayer("acs worker")))
  }).pipe(Effect.catchTag("ConfigError", Effect.die))
)

/**
 * The worker process's layer: the apply and webhook workers, woken by the sequencers' notifications, over the services, on a migrated PostgreSQL database; traced
 * and with `/metrics` on METRICS_PORT as the API process is (telemetry/).
 */
export const WorkerAppLive = Layer.mergeAll(WorkerLive, WebhookWorkerLive, EventWakeLive, MetricsPortLive).pipe(
  Layer.provide(ServicesLive),
  Layer.provide(WorkerDatabaseLive),
  withTracing
)

const LoggingLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const level = yield* logLevelConfig(LogLevel.Info)
    return Layer.merge(Logger.json, Logger.minimumLogLevel(level))
  })
).pipe(Layer.orDie)

/**
 * The worker process's program, for `NodeRuntime.runMain(workerMain, { disablePrettyLogger: true })`: runs
 * until SIGTERM or SIGINT, then lets the job in hand finish (bounded by SHUTDOWN_TIMEOUT_MS).
 */
export const workerMain = armShutdownDeadline.pipe(
  Effect.zipRight(Layer.launch(WorkerAppLive)),
  Effect.provide(LoggingLive)
)
