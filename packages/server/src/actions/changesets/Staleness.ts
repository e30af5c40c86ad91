/**
 * Whether the account moved under a changeset's plan since it was submitted (docs/contract.md 4.3, "stale plans
 * refused"): for each member, an outside change to an entity it touches (from the change history, in the
 * ledger), another acs action applied to one of them, or the warehouse no longer holding what the member's kind
 * checks (its `recheck`, the drift rule an approval of a single action runs). Answers the members that moved.
 */
import type { ActionRecord } from "@acs/domain/Actions"
import { ExternalChangePayload } from "@acs/domain/Actions"
import type { MovedMember } from "@acs/domain/Errors"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import { kindNamed } from "../kinds/Catalog.ts"
import { namedIn, prefetchedView } from "../kinds/PrefetchedView.ts"
import { touchedEntities, touches } from "../outside/TouchedEntities.ts"
import { actionColumns, decodeActionRows, toRecord } from "../pipeline/ActionRow.ts"

const decodeExternal = Schema.decodeUnknown(ExternalChangePayload)

export const movedMembers = (
  account: AccountRecord,
  changesetId: string,
  submittedAtIso: string,
  members: ReadonlyArray<ActionRecord>
): Effect.Effect<ReadonlyArray<typeof MovedMember.Type>, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // What happened to the account since the plan was frozen: changes outside acs, and acs actions of any other
    // changeset (or none) that applied.
    const since = yield* sql`SELECT ${actionColumns(sql)} FROM actions
      WHERE project_id = ${account.projectId} AND changeset_id IS DISTINCT FROM ${changesetId}
        AND ((kind = 'external_change' AND created_at > ${submittedAtIso}::timestamptz)
          OR (kind <> 'external_change' AND applied_at > ${submittedAtIso}::timestamptz))
      ORDER BY created_at`.pipe(Effect.flatMap(decodeActionRows), Effect.map((rows) => rows.map(toRecord)), Effect.orDie)
    const outside = yield* Effect.forEach(since.filter((a) => a.kind === "external_change"), (action) =>
      Effect.map(Effect.orDie(decodeExternal(action.payload)), (payload) => ({ action, payload })))
    const ours = since.filter((a) => a.kind !== "external_change").map((action) => ({ action, entities: touchedEntities(action) }))
    // What every member's recheck looks up, read once for all of them.
    const view = yield* prefetchedView(account, namedIn(members.map((member) => member.payload)))
    const moved: Array<typeof MovedMember.Type> = []
    for (const member of members) {
      const entities = touchedEntities(member)
      const changedOutside = outside.find(({ payload }) => touches(entities, payload.entity.platformType, payload.entity.id))
      if (changedOutside !== undefined) {
        const { upstream } = changedOutside.payload
        moved.push({
          actionId: member.actionId,
          why: `changed outside acs by ${upstream.modifiedBy} at ${upstream.eventTime} (${changedOutside.action.actionId})`
        })
        continue
      }
      const changedByAcs = ours.find((other) => other.entities.some((ref) => touches(entities, ref.type, ref.id)))
      if (changedByAcs !== undefined) {
        moved.push({
          actionId: member.actionId,
          why: `another acs action, ${changedByAcs.action.actionId} (${changedByAcs.action.kind}), applied to it at ${changedByAcs.action.appliedAt}`
        })
        continue
      }
      if (member.kind === "external_change") continue
      const failed = yield* kindNamed(member.kind).use((definition) =>
        Effect.flatMap(Effect.orDie(Schema.decodeUnknown(definition.payload)(member.payload)), (payload) =>
          definition.recheck(payload, view).pipe(
            Effect.as(undefined),
            Effect.catchAll((rejection) =>
              Effect.succeed(rejection._tag === "ValidationFailed" ? rejection.validation_errors.join("; ") : rejection.message))
          ))
      ).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      if (failed !== undefined) moved.push({ actionId: member.actionId, why: `the warehouse no longer holds it: ${failed}` })
    }
    return moved
  })
