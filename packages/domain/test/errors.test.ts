/** Every docs/contract.md 7 code has one error class, and the one encoder gives its status and exact envelope. */
import { describe, expect, it } from "vitest"
import * as Errors from "../src/Errors.ts"

const samples: ReadonlyArray<readonly [Errors.AcsError, Errors.ErrorCode, Record<string, unknown>]> = [
  [new Errors.Unauthorized({ message: "m" }), "unauthorized", {}],
  [new Errors.ForbiddenScope({ message: "m", required_scope: "write", key_scope: "read" }), "forbidden_scope", {
    required_scope: "write",
    key_scope: "read"
  }],
  [new Errors.ForbiddenScope({ message: "m", required_grant: "approve" }), "forbidden_scope", { required_grant: "approve" }],
  [new Errors.AccountMismatch({ message: "m" }), "account_mismatch", {}],
  [new Errors.ReadOnlyAccount({ message: "m" }), "read_only_account", {}],
  [new Errors.AccountNotFound({ message: "m" }), "account_not_found", {}],
  [new Errors.NotFound({ message: "m" }), "not_found", {}],
  [new Errors.InvalidRequest({ message: "m" }), "invalid_request", {}],
  [new Errors.ValidationFailed({ message: "m", validation_errors: ["a", "b"], action_id: "act_1" }), "validation_failed", {
    validation_errors: ["a", "b"],
    action_id: "act_1"
  }],
  [new Errors.BidStrategyConflict({ message: "m" }), "bid_strategy_conflict", {}],
  [new Errors.NotRevertible({ message: "m" }), "not_revertible", {}],
  [new Errors.NoOp({ message: "m" }), "no_op", {}],
  [new Errors.Conflict({ message: "m" }), "conflict", {}],
  [new Errors.SyncInProgress({ message: "m" }), "sync_in_progress", {}],
  [new Errors.ConnectionError({ message: "m" }), "connection_error", {}],
  [new Errors.RateLimited({ message: "m", retry_after_ms: 1500 }), "rate_limited", { retry_after_ms: 1500 }],
  [new Errors.Internal({ message: "m" }), "internal", {}],
  [new Errors.UpstreamError({ message: "m", request_id: "r-1" }), "upstream_error", { request_id: "r-1" }],
  [new Errors.UpstreamUnavailable({ message: "m", retry_after_ms: 2000 }), "upstream_unavailable", { retry_after_ms: 2000 }],
  [new Errors.DatabaseUnavailable({ message: "m", retry_after_ms: 5000 }), "database_unavailable", { retry_after_ms: 5000 }]
]

describe("error envelope", () => {
  it("covers every code of docs/contract.md 7", () => {
    expect(new Set(samples.map(([, code]) => code))).toEqual(new Set(Object.keys(Errors.ErrorCodes)))
  })

  it.each(samples)("encodes %s with its status and the exact SPEC body", (error, code, extra) => {
    const { body, status } = Errors.toEnvelope(error)
    expect(status).toBe(Errors.ErrorCodes[code])
    const retryable = "retry_after_ms" in extra
    expect(body).toEqual({
      error: { code, message: "m", ...extra },
      ...(retryable ? { retry_after_ms: extra["retry_after_ms"] } : {})
    })
  })
})
