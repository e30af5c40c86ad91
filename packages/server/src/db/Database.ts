/**
 * The SqlClient: PostgreSQL through `@effect/sql-pg` when DATABASE_URL is set, otherwise an embedded
 * PGlite kept under ACS_DATA_DIR and served to the same client over a loopback socket, so one code path
 * (and one set of migrations) runs on both.
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Config, Context, Duration, Effect, Layer, Option, Redacted, String as Str } from "effect"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import { deferAfterCommit } from "./AfterCommit.ts"
import { DatabaseBusy, lockDataDir } from "./DataDirLock.ts"
import { camelName } from "./Rows.ts"
import Pg from "pg"

/** Timestamps, dates and int8 as strings: microsecond precision, calendar days and exact micros survive the trip. */
const types = {
  getTypeParser: (oid: number, format?: "text" | "binary") => {
    switch (oid) {
      case 20: // int8
      case 1082: // date: a calendar day, not an instant
      case 1114: // timestamp
      case 1184: // timestamptz
        return (value: string) => value
      default:
        return Pg.types.getTypeParser(oid, format ?? "text")
    }
  }
} as const

const clientNames = {
  transformResultNames: camelName,
  transformQueryNames: Str.camelToSnake,
  types
}

export const DatabaseMode = Config.option(Config.redacted("DATABASE_URL"))

/**
 * A statement that begins with this comment is prepared once per connection and then only bound and
 * executed (PostgreSQL parses and plans it once, not on every call): for the hot statements of the request
 * path, whose text is fixed. Statements whose text varies (an `IN` list, optional filters) have one prepared
 * statement per text variant, so only statements with a few variants may carry it.
 */
export const PREPARED = "/* prepared */"

const statementNames = new Map<string, string>()

const statementName = (text: string): string => {
  let name = statementNames.get(text)
  if (name === undefined) {
    name = `acs_${statementNames.size + 1}`
    statementNames.set(text, name)
  }
  return name
}

type Query = (config: unknown, values?: unknown, callback?: unknown) => unknown

/** @effect/sql-pg sends text and values; a statement marked PREPARED goes as pg's named statement instead. */
const prepareMarked = (client: Pg.PoolClient) => {
  const query = client.query.bind(client) as Query
  const named: Query = (config, values, callback) =>
    typeof config === "string" && config.startsWith(PREPARED)
      ? query({ name: statementName(config), text: config }, values, callback)
      : query(config, values, callback)
  Object.assign(client, { query: named })
}

/**
 * An interrupted statement (its request gone, a stream closed, a timeout around it) is left to finish on its
 * connection, never cancelled. @effect/sql-pg cancels one with `pg_cancel_backend` over another pooled
 * connection and, when the statement ends before that cancel lands, has already handed its connection back:
 * the cancel then ends whatever the connection runs next, another request's statement
 * (interruptedStatements.test.ts). It cancels only a connection whose backend `processID` it knows; without one
 * it releases the connection at once, pg runs the next statement there after the abandoned one, and a
 * transaction's ROLLBACK waits for it the same way.
 */
const withoutCancel = (client: Pg.PoolClient) => {
  Object.defineProperty(client, "processID", { value: undefined, writable: true })
}

/**
 * The pool @effect/sql-pg would make (its defaults), with the marked statements prepared and no cancels, and a
 * bound on waiting for a connection (opening one, or a free one from a full pool): past it the statement fails
 * and the request is answered 503 `database_unavailable` (db/DatabaseOutage.ts) instead of hanging while the
 * database is unreachable.
 */
const preparingPool = (url: Redacted.Redacted, maxConnections: number, connectTimeoutMs: number) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const pool = new Pg.Pool({
        connectionString: Redacted.value(url),
        max: maxConnections,
        connectionTimeoutMillis: connectTimeoutMs,
        application_name: "acs",
        types
      })
      pool.on("connect", (client) => {
        prepareMarked(client)
        withoutCancel(client)
      })
      // An idle connection that breaks is dropped by the pool; the next query opens another.
      pool.on("error", () => {})
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: Duration.seconds(5),
          onTimeout: () => new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        }),
        Effect.tapError(() => Effect.promise(() => pool.end()))
      )
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )

const freePort = Effect.async<number, Error>((resume) => {
  const server = Net.createServer()
  server.once("error", (error) => resume(Effect.fail(error)))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Opens PGlite on `dataDir` and serves it on a loopback port for the lifetime of the scope. */
export const embeddedPostgres = (dataDir: string, owner: string) =>
  Effect.gen(function*() {
    yield* lockDataDir(Path.resolve(dataDir), owner)
    const dir = Path.resolve(dataDir, "pgdata")
    Fs.mkdirSync(dir, { recursive: true })
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise(() => PGlite.create(dir)),
      (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
    )
    const port = yield* freePort
    // One connection: PGlite has a single backend and a larger pool breaks the socket server.
    yield* Effect.acquireRelease(
      Effect.tryPromise(async () => {
        const server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 1 })
        await server.start()
        return server
      }),
      (server) => Effect.promise(() => server.stop()).pipe(Effect.ignore)
    )
    return port
  }).pipe(Effect.catchAll((error) =>
    error instanceof DatabaseBusy
      ? Effect.fail(error)
      : Effect.die(new Error(`cannot open the embedded database under ${dataDir}: ${String(error)}`))
  ))

/** The client of the embedded database served on `port`: one connection, PGlite having a single backend. */
const embeddedClient = (port: number) =>
  PgClient.layer({ host: "127.0.0.1", port, username: "postgres", database: "postgres", maxConnections: 1, ...clientNames })

const withAfterCommit = <E, R>(layer: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E, R>) =>
  Layer.tap(layer, (context) => Effect.sync(() => deferAfterCommit(Context.get(context, SqlClient.SqlClient))))

/**
 * The SqlClient; `owner` names this process in the embedded database's lock ("in use by …"). Its
 * transactions run their `afterCommit` effects once committed (db/AfterCommit.ts).
 */
export const databaseLayer = (owner: string) => Layer.unwrapScoped(
  Effect.gen(function*() {
    const url = yield* DatabaseMode
    if (Option.isSome(url)) {
      const maxConnections = yield* Config.integer("DATABASE_POOL_SIZE").pipe(Config.withDefault(10))
      const connectTimeoutMs = yield* Config.integer("DATABASE_CONNECT_TIMEOUT_MS").pipe(Config.withDefault(10_000))
      return PgClient.layerFromPool({ acquire: preparingPool(url.value, maxConnections, connectTimeoutMs), ...clientNames })
    }
    const dataDir = yield* Config.string("ACS_DATA_DIR").pipe(Config.withDefault("./.acs"))
    const port = yield* embeddedPostgres(dataDir, owner)
    yield* Effect.logInfo("using the embedded database").pipe(Effect.annotateLogs({ dataDir }))
    return embeddedClient(port)
  }).pipe(Effect.catchTag("ConfigError", Effect.die))
).pipe(withAfterCommit)

/** The embedded database under `dataDir`, whatever the configuration says: the in-process tests' (db/TestDatabase.ts). */
export const embeddedDatabaseLayer = (dataDir: string, owner: string) =>
  Layer.unwrapScoped(Effect.map(embeddedPostgres(dataDir, owner), embeddedClient)).pipe(withAfterCommit)

export const DatabaseLive = databaseLayer("acs server")
