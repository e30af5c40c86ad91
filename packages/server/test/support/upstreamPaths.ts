/**
 * The upstream calls tests put simulator faults on or look for in the simulator's call log, written to
 * match the call whichever API the server's connection speaks: the Campaign Management API v5
 * (`/api/v5/campaigns/{id}/adgroups/{id}/targetingkeywords/bulk`...) or the Apple Ads Platform API v1
 * (`/v1/keywords/bulk-create`...). A test written with them asserts the same behaviour on either.
 *
 * Path regexes are sources (as a fault's `path` takes them); where the two versions differ in more than
 * the path (keyword updates change method, v1 has no bulk delete), a function gives one fault or call
 * pattern per version, each matching only its own version's calls.
 */
import type { CallRecord } from "@acs/upstream/simulator/SimulatorCallLog"
import type { SimulatorControl } from "@acs/upstream/simulator/SimulatorControl"
import type { FaultSpec } from "@acs/upstream/simulator/SimulatorFaults"

/** POST: keywords created in bulk (v5 `…/adgroups/{id}/targetingkeywords/bulk`, v1 `/keywords/bulk-create`). */
export const KEYWORDS_BULK_CREATE = "(/targetingkeywords/bulk|/keywords/bulk-create)$"

/**
 * POST: an ad group's negative keywords created in bulk (v5 `…/adgroups/{id}/negativekeywords/bulk`);
 * v1's `/negative-keywords/bulk-create` serves both levels, so on v1 it matches campaign negatives too.
 */
export const AD_GROUP_NEGATIVES_BULK_CREATE = "(/adgroups/\\d+/negativekeywords/bulk|/negative-keywords/bulk-create)$"

/** POST: an ad group created (v5 `/campaigns/{id}/adgroups`, v1 `/adgroups`). */
export const AD_GROUP_CREATE = "(/campaigns/\\d+/adgroups|/v1/adgroups)$"

/** One version's form of an upstream call, as the call log filters it (method exact, path a regex). */
export interface UpstreamCallPattern {
  readonly method: string
  readonly path: RegExp
}

/** Keywords updated in bulk: v5 `PUT …/targetingkeywords/bulk`, v1 `POST /keywords/bulk-update`. */
export const KEYWORDS_BULK_UPDATE: ReadonlyArray<UpstreamCallPattern> = [
  { method: "PUT", path: /\/targetingkeywords\/bulk$/ },
  { method: "POST", path: /^\/v1\/keywords\/bulk-update$/ }
]

/** The calls since `since` that match any of `patterns`, in arrival order. */
export const callsTo = (
  control: SimulatorControl,
  patterns: ReadonlyArray<UpstreamCallPattern>,
  since: number
): Array<CallRecord> =>
  patterns.flatMap((pattern) => control.listCalls({ ...pattern, since })).sort((a, b) => a.seq - b.seq)

/**
 * Faults refusing the keyword at `row` (0-based) of the next keywords delete: on v5 a failed row of
 * `POST …/targetingkeywords/delete/bulk`; on v1, which has no bulk delete and deletes one
 * `DELETE /keywords/{id}` at a time, a 400 to that keyword's call (the client reports it as a failed row).
 */
export const keywordDeleteRowRefused = (row: number, message = "simulated refusal"): Array<FaultSpec> => [
  { kind: "bulkRows", rows: [row], method: "POST", path: "/targetingkeywords/delete/bulk$", message },
  { kind: "status", status: 400, messageCode: "INVALID_INPUT", message, method: "DELETE", path: "^/v1/keywords/\\d+$", nth: row + 1 }
]
