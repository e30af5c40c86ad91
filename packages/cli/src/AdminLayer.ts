/**
 * The database and the services the admin commands use, chosen exactly as the server chooses them:
 * DATABASE_URL set → PostgreSQL; unset → the embedded PGlite under ACS_DATA_DIR (default ./.acs), which
 * the CLI opens only while no other process holds it.
 */
import { Accounts } from "@acs/server/accounts/Accounts"
import { KeyStore } from "@acs/server/auth/KeyStore"
import { People } from "@acs/server/auth/People"
import { DatabaseLive, DatabaseMode } from "@acs/server/db/Database"
import { Config, Effect, Layer, Option } from "effect"
import { lockDataDir } from "./DataDirLock.ts"

export const DataDir = Config.string("ACS_DATA_DIR").pipe(Config.withDefault("./.acs"))

/** The SqlClient; in embedded mode behind the data directory's lock. */
export const AdminDatabaseLive = Layer.unwrapScoped(
  Effect.gen(function*() {
    const url = yield* DatabaseMode.pipe(Effect.orDie)
    if (Option.isNone(url)) yield* lockDataDir(yield* DataDir.pipe(Effect.orDie))
    return DatabaseLive
  })
)

export const AdminLive = Layer.mergeAll(KeyStore.Default, People.Default).pipe(
  Layer.provideMerge(Accounts.Default),
  Layer.provideMerge(AdminDatabaseLive)
)
