/**
 * The ledger page is answered from raw rows in their encoded form (ActionRow.toEncodedRecord), not through
 * the client's name transform and the schema's encoder: the bytes must be the same as theirs, whatever the
 * JSON columns hold.
 */
import { ActionRecord } from "@acs/domain/Actions"
import { Statement } from "@effect/sql"
import { Schema, String as Str } from "effect"
import { describe, expect, it } from "vitest"
import { ActionRow, type RawActionRow, toEncodedRecord, toRecord } from "../../src/actions/pipeline/ActionRow.ts"

const clientTransform = Statement.defaultTransforms(Str.snakeToCamel, true)
const encode = Schema.encodeSync(ActionRecord)

/** What a read with the client answers: its nested transform, the row's schema, `toRecord`, then the record's encoder. */
const decodeRow = Schema.decodeUnknownSync(ActionRow)
const before = (raw: RawActionRow) => JSON.stringify(encode(toRecord(decodeRow(clientTransform.array([raw])[0]))))
/** The raw row as the driver parses it: JSON columns are fresh objects. */
const fromDriver = (row: RawActionRow): RawActionRow => JSON.parse(JSON.stringify(row)) as RawActionRow

const base: RawActionRow = {
  action_id: "act_1",
  project_id: "prj_1",
  kind: "budget_change",
  mode: "queued",
  status: "proposed",
  risk_tier: "review",
  policy_reasons: ["proposed with an API key"],
  summary: "Change the daily budget",
  reason: "history",
  payload: { campaignId: "1", campaignName: "Filler", newDailyBudgetMicros: 90000000, priorDailyBudgetMicros: 100000000 },
  result: null,
  warnings: null,
  failure: null,
  proposed_by: { kind: "key", id: "key_1", name: "bench" },
  decided_by: null,
  decision_reason: null,
  approvals: [],
  created_at_iso: "2026-11-25T10:00:00.123456Z",
  decided_at_iso: null,
  applied_at_iso: null,
  revert_of: null,
  reverted_by: null,
  superseded_by: null,
  changeset_id: null,
  depends_on: []
}

describe("toEncodedRecord", () => {
  it("answers the bytes the transform and the schema's encoder answered, for every shape of row", () => {
    const rows: ReadonlyArray<RawActionRow> = [
      base,
      {
        ...base,
        status: "applied",
        result: { created_keywords: [{ keyword_id: "9", text: "a" }], nested: { deep_key: [[{ x_y: 1 }]] }, empty: [] },
        warnings: ["a warning"],
        proposed_by: { kind: "key", id: "key_1", name: "agent", root: { kind: "person", id: "psn_1", name: "Ann", extra: 1 } } as unknown as RawActionRow["proposed_by"],
        decided_by: { kind: "person", id: "psn_1", name: "Ann", extra_field: "dropped", root: { kind: "person", id: "psn_1", name: "Ann" } } as unknown as RawActionRow["decided_by"],
        decision_reason: "ok",
        approvals: [
          { by: { kind: "person", id: "psn_2", name: "Bo", extra: 1 }, at: "2026-11-25T10:00:00.500Z" },
          { by: { kind: "person", id: "psn_1", name: "Ann", root: { kind: "person", id: "psn_1", name: "Ann" } }, at: "2026-11-25T10:00:01.000Z" }
        ] as unknown as RawActionRow["approvals"],
        decided_at_iso: "2026-11-25T10:00:01.000000Z",
        applied_at_iso: "2026-11-25T10:00:02.000000Z",
        revert_of: "act_0",
        reverted_by: "act_2",
        superseded_by: "act_3"
      },
      {
        ...base,
        mode: null,
        status: "failed",
        // A rejected proposal's payload is the request's body as sent: any JSON at all.
        payload: {
          snake_case: { inner_key: true },
          _leading: 1,
          mixed: [{ a_b: 1 }, 2, "str", null, [{ c_d: 3 }]],
          primitives: [1, "two", null],
          collide_me: 1,
          collideMe: 2,
          numbers: [1.5, -0, 1e21]
        },
        failure: { step: null, stepName: null, message: "bad", upstreamRequestId: null, extra: 1 } as unknown as RawActionRow["failure"]
      },
      { ...base, failure: { step: 2, step_name: "second", message: "m", upstream_request_id: "r" } as unknown as RawActionRow["failure"] }
    ]
    for (const row of rows) expect(JSON.stringify(toEncodedRecord(fromDriver(row)))).toBe(before(fromDriver(row)))
  })

  it("leaves JSON with no key to rename as it is (no copy)", () => {
    const row = fromDriver(base)
    const record = toEncodedRecord(row)
    expect(record.payload).toBe(row.payload)
    expect(record.policyReasons).toBe(row.policy_reasons)
  })
})
