/**
 * What runs after a sync succeeded. The warehouse sits below the ledger, so it names the hook and the layer
 * above provides it (actions/ records the outside changes the fresh copy may reveal).
 */
import type { UpstreamClient } from "@acs/upstream/Upstream"
import { Context, type Effect } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"

export class AfterSync extends Context.Tag("acs/AfterSync")<AfterSync, {
  /** Its failure is not the sync's: the caller logs it and moves on. */
  readonly run: (client: UpstreamClient, account: AccountRecord) => Effect.Effect<unknown, unknown>
}>() {}
