/**
 * The embedded default's demo: on first start the default org is connected to the in-process simulator,
 * every simulator account is imported, and each gets its first sync in the background, so a newcomer's
 * `pnpm start` shows live accounts. With DATABASE_URL it is off unless ACS_DEMO=true.
 */
import { Config, Effect, Option } from "effect"
import { Accounts } from "../accounts/Accounts.ts"
import { Connections } from "../accounts/Connections.ts"
import { DatabaseMode } from "../db/Database.ts"
import { defaultOrgId } from "../auth/Bootstrap.ts"
import { Syncs } from "../warehouse/Syncs.ts"
import { SqlClient } from "@effect/sql"
import { countOf } from "../db/Rows.ts"

export const UpstreamMode = Config.literal("simulator", "apple")("UPSTREAM").pipe(Config.withDefault("simulator" as const))

/** The API the demo connection speaks to the simulator: v1 (Apple Ads Platform API), or v5 to try the legacy path. */
const DemoApiVersion = Config.literal("v1", "v5")("SIMULATOR_API_VERSION").pipe(Config.withDefault("v1" as const))

export const connectDemo = Effect.gen(function*() {
  const embedded = Option.isNone(yield* DatabaseMode)
  const mode = yield* UpstreamMode
  const enabled = yield* Config.boolean("ACS_DEMO").pipe(Config.withDefault(embedded && mode === "simulator"))
  if (!enabled) return
  const sql = yield* SqlClient.SqlClient
  const orgId = yield* defaultOrgId
  if (Option.isNone(orgId)) return
  const existing = yield* sql`SELECT count(*)::int AS n FROM connections WHERE org_id = ${orgId.value}`.pipe(Effect.flatMap(countOf))
  if (existing > 0) return
  const connections = yield* Connections
  const accounts = yield* Accounts
  const syncs = yield* Syncs
  yield* connections.save(orgId.value, { provider: "simulator", apiVersion: yield* DemoApiVersion })
  const client = yield* connections.clientFor(orgId.value)
  const upstreamIds = (yield* client.accounts).map((a) => a.upstreamAccountId)
  const imported = yield* connections.importInto(orgId.value, upstreamIds)
  for (const projectId of imported.created) {
    const account = yield* accounts.find(projectId)
    if (Option.isSome(account)) yield* syncs.begin(account.value, "import")
  }
  yield* Effect.logInfo("connected the demo org to the simulator").pipe(Effect.annotateLogs({ accounts: imported.accounts.length }))
}).pipe(
  Effect.catchAllCause((cause) => Effect.logWarning("could not set up the demo org", cause)),
  Effect.withSpan("DemoSetup.connect")
)
