/**
 * An `actions` row as read back from Postgres, declared once (docs/decisions/architecture.md "One owner per table"):
 * its select list and its raw snake-case form derive from it. The record the API shows is made from it.
 */
import { type ActionRecord, ActionStatus, Actor, Approval, Failure, Mode, RiskTier } from "@acs/domain/Actions"
import { ActionKind } from "@acs/domain/ProposalKinds"
import type { SqlClient } from "@effect/sql"
import { Schema } from "effect"
import { camelName, decodeRows, selectList, type SnakeRow } from "../../db/Rows.ts"

const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const ActionRow = Schema.Struct({
  actionId: Schema.String,
  projectId: Schema.String,
  kind: ActionKind,
  mode: Schema.NullOr(Mode),
  status: ActionStatus,
  riskTier: RiskTier,
  policyReasons: Schema.Array(Schema.String),
  summary: Schema.String,
  reason: Schema.String,
  payload: JsonObject,
  result: Schema.NullOr(JsonObject),
  warnings: Schema.NullOr(Schema.Array(Schema.String)),
  failure: Schema.NullOr(Failure),
  proposedBy: Actor,
  decidedBy: Schema.NullOr(Actor),
  decisionReason: Schema.NullOr(Schema.String),
  approvals: Schema.Array(Approval),
  /** Timestamps as ISO strings with microseconds (`iso` below). */
  createdAtIso: Schema.String,
  decidedAtIso: Schema.NullOr(Schema.String),
  appliedAtIso: Schema.NullOr(Schema.String),
  revertOf: Schema.NullOr(Schema.String),
  revertedBy: Schema.NullOr(Schema.String),
  supersededBy: Schema.NullOr(Schema.String),
  changesetId: Schema.NullOr(Schema.String),
  dependsOn: Schema.Array(Schema.String)
})
export type ActionRow = typeof ActionRow.Type

/** The row with more columns a statement reads beside it (`RETURNING org_id, ...`, the apply's starting point). */
export const actionRowWith = <Fields extends Schema.Struct.Fields>(extra: Fields) => Schema.Struct({ ...ActionRow.fields, ...extra })

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

/**
 * What a changeset's apply reads of its members: the columns the run, the bulk calls and the apply's checks use,
 * not the whole record (1,000 members' failures, proposers and reasons decoded for nothing cost a visible share of
 * the apply's CPU).
 */
export const MemberRow = ActionRow.pick(
  "actionId",
  "projectId",
  "kind",
  "mode",
  "status",
  "policyReasons",
  "payload",
  "result",
  "decidedBy",
  "createdAtIso",
  "decidedAtIso",
  "revertOf",
  "dependsOn"
)

/** A member as the changeset's apply reads it: the record's fields of `MemberRow`. */
export type MemberRecord = Pick<
  ActionRecord,
  "actionId" | "projectId" | "kind" | "mode" | "status" | "policyReasons" | "payload" | "result" | "decidedBy" | "created_at" | "decidedAt" | "revertOf" | "dependsOn"
>

/** `MemberRow`'s select list. */
export const MEMBER_COLUMNS = selectList(MemberRow.fields, { createdAtIso: iso("created_at"), decidedAtIso: iso("decided_at") })

/** Decodes the member rows a statement answered with the client's name transform. */
export const decodeMemberRows = decodeRows(MemberRow)

export const toMemberRecord = (row: typeof MemberRow.Type): MemberRecord => ({
  actionId: row.actionId,
  projectId: row.projectId,
  kind: row.kind,
  mode: row.mode,
  status: row.status,
  policyReasons: row.policyReasons,
  payload: row.payload,
  result: row.result,
  decidedBy: row.decidedBy,
  created_at: row.createdAtIso,
  decidedAt: row.decidedAtIso,
  revertOf: row.revertOf,
  dependsOn: row.dependsOn
})

/** Decodes rows of action ids (`SELECT action_id …`). */
export const decodeActionIds = decodeRows(ActionRow.pick("actionId"))

/** Decodes the rows a statement answered with the client's name transform. */
export const decodeActionRows = Schema.decodeUnknown(Schema.Array(ActionRow))

/** The select list every reader and `RETURNING` clause uses, from the row's fields. */
export const ACTION_COLUMNS = selectList(ActionRow.fields, {
  createdAtIso: iso("created_at"),
  decidedAtIso: iso("decided_at"),
  appliedAtIso: iso("applied_at")
})

/** `ACTION_COLUMNS` as a fragment. */
export const actionColumns = (sql: SqlClient.SqlClient) => sql.unsafe(ACTION_COLUMNS)

export const toRecord = (row: ActionRow): ActionRecord => ({
  actionId: row.actionId,
  projectId: row.projectId,
  kind: row.kind,
  mode: row.mode,
  status: row.status,
  riskTier: row.riskTier,
  policyReasons: row.policyReasons,
  summary: row.summary,
  reason: row.reason,
  payload: row.payload,
  result: row.result,
  warnings: row.warnings ?? [],
  failure: row.failure,
  proposedBy: row.proposedBy,
  decidedBy: row.decidedBy,
  decisionReason: row.decisionReason,
  approvals: row.approvals,
  created_at: row.createdAtIso,
  decidedAt: row.decidedAtIso,
  appliedAt: row.appliedAtIso,
  revertOf: row.revertOf,
  revertedBy: row.revertedBy,
  supersededBy: row.supersededBy,
  changesetId: row.changesetId,
  dependsOn: row.dependsOn
})

/**
 * The ledger page's rows as the driver answers them, read without the client's name transform: a page of
 * 50 rows renamed key by key, their JSON columns included, cost more than the SQL (docs/decisions/pipeline.md).
 * Not decoded: `toEncodedRecord` maps each field to the schema's encoded form (actionRowEncoding.test.ts).
 */
export type RawActionRow = SnakeRow<typeof ActionRow.Encoded>

/** The client's transform of a key (db/Rows.ts). */
const camelKey = camelName

/**
 * What the client's nested transform (`transformJson`) makes of a JSON value, built anew only where a key
 * changes: the same result, quirks included (an array is renamed only when its first element is a plain
 * object, and then every element is read as one).
 */
const camelJson = (value: unknown): unknown => {
  if (Array.isArray(value)) {
    if (value.length === 0 || (value[0] as object).constructor !== Object) return value
    return camelArray(value)
  }
  return isPlainObject(value) ? camelObject(value) : value
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && value.constructor === Object

const camelObject = (object: Record<string, unknown>): Record<string, unknown> => {
  let out: Record<string, unknown> | undefined
  const keys = Object.keys(object)
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    const renamed = camelKey(key)
    const value = camelJson(object[key])
    // `__proto__` is copied as the client copies it (an assignment, which sets the prototype).
    if (out === undefined && (renamed !== key || value !== object[key] || key === "__proto__")) {
      out = {}
      for (let j = 0; j < i; j++) out[keys[j]!] = object[keys[j]!]
    }
    if (out !== undefined) out[renamed] = value
  }
  return out ?? object
}

const camelArray = (array: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
  let out: Array<unknown> | undefined
  for (let i = 0; i < array.length; i++) {
    const element = array[i]
    let renamed: unknown
    if (Array.isArray(element)) renamed = camelArray(element)
    else if (isPlainObject(element)) renamed = camelObject(element)
    else {
      // The client reads any other element as an object too (`for…in`): a primitive becomes `{}`.
      const object: Record<string, unknown> = {}
      for (const key in element as object) object[camelKey(key)] = camelJson((element as Record<string, unknown>)[key])
      renamed = object
    }
    if (out === undefined && renamed !== element) out = array.slice(0, i)
    if (out !== undefined) out.push(renamed)
  }
  return out ?? array
}

const actor = (value: unknown): Actor => {
  const a = camelJson(value) as Actor
  return a.root === undefined
    ? { kind: a.kind, id: a.id, name: a.name }
    : { kind: a.kind, id: a.id, name: a.name, root: { kind: a.root.kind, id: a.root.id, name: a.root.name } }
}

/**
 * A raw row as the API answers it: the record `toRecord` makes, already in the form the ActionRecord schema
 * encodes it to (its key order; an actor's and a failure's own fields only), so the page is answered without
 * encoding it again. test/unit/actionRowEncoding.test.ts holds it to the schema's output, byte for byte.
 */
export const toEncodedRecord = (row: RawActionRow): ActionRecord => {
  const failure = row.failure === null ? null : camelJson(row.failure) as Failure
  return {
    actionId: row.action_id,
    projectId: row.project_id,
    kind: row.kind,
    mode: row.mode,
    status: row.status,
    riskTier: row.risk_tier,
    policyReasons: camelJson(row.policy_reasons) as ReadonlyArray<string>,
    summary: row.summary,
    reason: row.reason,
    payload: camelJson(row.payload) as Record<string, unknown>,
    result: row.result === null ? null : camelJson(row.result) as Record<string, unknown>,
    warnings: row.warnings === null ? [] : camelJson(row.warnings) as ReadonlyArray<string>,
    failure: failure === null
      ? null
      : { step: failure.step, stepName: failure.stepName, message: failure.message, upstreamRequestId: failure.upstreamRequestId },
    proposedBy: actor(row.proposed_by),
    decidedBy: row.decided_by === null ? null : actor(row.decided_by),
    decisionReason: row.decision_reason,
    approvals: (row.approvals as ReadonlyArray<{ readonly by: unknown; readonly at: string }>).map((approval) => ({
      by: actor(approval.by),
      at: approval.at
    })),
    created_at: row.created_at_iso,
    decidedAt: row.decided_at_iso,
    appliedAt: row.applied_at_iso,
    revertOf: row.revert_of,
    revertedBy: row.reverted_by,
    supersededBy: row.superseded_by,
    changesetId: row.changeset_id,
    dependsOn: row.depends_on
  }
}
