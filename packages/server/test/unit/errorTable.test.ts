/** Everything about errors derives from the one table in Errors.ts: bodies, statuses, codes, the RPC schema. */
import { AcsErrorSchema, AcsErrorTable, ErrorBodies, ErrorCodes, isAcsError, RateLimited, toEnvelope, ValidationFailed } from "@acs/domain/Errors"
import { HttpApiSchema } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"

describe("the error table", () => {
  it("gives every error one code, its status and an envelope body annotated with that status", () => {
    const entries = Object.entries(AcsErrorTable)
    expect(new Set(entries.map(([, entry]) => entry.code)).size).toBe(entries.length)
    for (const [tag, entry] of entries) {
      expect(ErrorCodes[entry.code]).toBe(entry.status)
      const body = ErrorBodies[tag as keyof typeof ErrorBodies]
      expect(HttpApiSchema.getStatusError(body as Schema.Schema.Any)).toBe(entry.status)
    }
    // A database outage is a retryable 503 of its own (docs/contract.md 7), not 500 `internal`.
    expect(ErrorCodes.database_unavailable).toBe(503)
  })

  it.effect("encodes the SPEC envelope with the class's own fields, retry_after_ms also at the top", () =>
    Effect.sync(() => {
      const invalid = new ValidationFailed({ message: "bad", validation_errors: ["x"], action_id: "act_1" })
      expect(toEnvelope(invalid)).toEqual({
        status: 422,
        body: { error: { code: "validation_failed", message: "bad", validation_errors: ["x"], action_id: "act_1" } }
      })
      const limited = new RateLimited({ message: "slow down", retry_after_ms: 1000 })
      expect(JSON.stringify(toEnvelope(limited).body)).toBe(
        `{"error":{"code":"rate_limited","message":"slow down","retry_after_ms":1000},"retry_after_ms":1000}`
      )
      expect(isAcsError(limited)).toBe(true)
      expect(isAcsError({ _tag: "Nope" })).toBe(false)
    }))

  it.effect("round-trips every error through the RPC schema and through its envelope", () =>
    Effect.gen(function*() {
      const limited = new RateLimited({ message: "slow down", retry_after_ms: 1000 })
      const overRpc = yield* Schema.decodeUnknown(AcsErrorSchema)(yield* Schema.encode(AcsErrorSchema)(limited))
      expect(overRpc).toEqual(limited)
      const body = yield* Schema.encode(ErrorBodies.RateLimited)(limited)
      expect(yield* Schema.decodeUnknown(ErrorBodies.RateLimited)(body)).toEqual(limited)
    }))
})
