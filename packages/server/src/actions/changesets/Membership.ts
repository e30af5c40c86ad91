/**
 * Whether a proposal's body makes it a changeset's member (docs/contract.md 4.3): `changesetId` names an open
 * changeset of the same account, and every `dependsOn` names a member already in it (so dependencies never form
 * a cycle). Read before the proposal's statement, which checks again that the changeset is still open.
 */
import { Conflict, InvalidRequest, NotFound, ValidationFailed } from "@acs/domain/Errors"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { decodeRows } from "../../db/Rows.ts"
import { decodeActionIds } from "../pipeline/ActionRow.ts"
import { ChangesetRow } from "./ChangesetRow.ts"

export type MembershipError = NotFound | Conflict | InvalidRequest | ValidationFailed

export interface Membership {
  readonly changesetId: string
  readonly dependsOn: ReadonlyArray<string>
}

const field = (body: unknown, name: string): unknown =>
  typeof body === "object" && body !== null && name in body ? (body as Record<string, unknown>)[name] : undefined

const strings = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : []

const decodeStatus = decodeRows(ChangesetRow.pick("status"))

/** The proposal's membership, undefined when it names no changeset; refused when it cannot be one. */
export const membershipOf = (
  projectId: string,
  body: unknown
): Effect.Effect<Membership | undefined, MembershipError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const changesetId = field(body, "changesetId")
    const dependsOn = [...new Set(strings(field(body, "dependsOn")))]
    if (typeof changesetId !== "string") {
      if (dependsOn.length > 0) return yield* new InvalidRequest({ message: "dependsOn names members of a changeset: send changesetId with it" })
      return undefined
    }
    const sql = yield* SqlClient.SqlClient
    const found = yield* sql`SELECT status FROM changesets WHERE changeset_id = ${changesetId} AND project_id = ${projectId}`.pipe(
      Effect.flatMap(decodeStatus),
      Effect.orDie
    )
    if (found[0] === undefined) return yield* new NotFound({ message: `no changeset ${changesetId} in this account` })
    if (found[0].status !== "open") {
      return yield* new Conflict({ message: `changeset ${changesetId} is ${found[0].status}: members are added only while it is open` })
    }
    if (dependsOn.length > 0) {
      const members = yield* sql`SELECT action_id FROM actions WHERE changeset_id = ${changesetId} AND ${sql.in("action_id", dependsOn)}`.pipe(
        Effect.flatMap(decodeActionIds),
        Effect.orDie
      )
      const known = new Set(members.map((member) => member.actionId))
      const unknown = dependsOn.filter((id) => !known.has(id))
      if (unknown.length > 0) {
        const errors = unknown.map((id) => `dependsOn: ${id} is not a member of changeset ${changesetId}`)
        return yield* new ValidationFailed({ message: errors.join("; "), validation_errors: errors })
      }
    }
    return { changesetId, dependsOn }
  })
