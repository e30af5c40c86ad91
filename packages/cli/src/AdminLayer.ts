/**
 * The database and the services the admin commands use, chosen exactly as the server chooses them:
 * DATABASE_URL set → PostgreSQL; unset → the embedded PGlite under ACS_DATA_DIR (default ./.acs), which
 * is opened only while no other process holds its lock.
 */
import { Accounts } from "@acs/server/accounts/Accounts"
import { KeyStore } from "@acs/server/auth/KeyStore"
import { People } from "@acs/server/auth/People"
import { databaseLayer } from "@acs/server/db/Database"
import { Layer } from "effect"

export const AdminLive = Layer.mergeAll(KeyStore.Default, People.Default).pipe(
  Layer.provideMerge(Accounts.Default),
  Layer.provideMerge(databaseLayer("acs cli"))
)
