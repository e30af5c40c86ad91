/** What the kind modules share: body decoding, lookups that fail with SPEC codes, and the one-entity step. */
import { InvalidRequest, NoOp, NotFound, ValidationFailed } from "@acs/domain/Errors"
import { decimalFromMicros } from "@acs/upstream/Money"
import type { BulkResult, UpstreamFailure } from "@acs/upstream/Upstream"
import { Effect, ParseResult, Schema } from "effect"
import { Drift, type Step, type StepContext, StepRefused, type Touched, type Verdict } from "./Kind.ts"

/** Decodes a request body of the kind (already decoded by the surface; decoded again here, so no cast). */
export const decodeBody = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(Schema.typeSchema(schema), { errors: "all" })
  return (body: unknown) =>
    decode(body).pipe(Effect.mapError((error) =>
      new InvalidRequest({ message: ParseResult.TreeFormatter.formatErrorSync(error) })
    ))
}

export const found = <A>(entity: A | undefined, message: string): Effect.Effect<A, NotFound> =>
  entity === undefined ? Effect.fail(new NotFound({ message })) : Effect.succeed(entity)

export const noOp = (message: string) => Effect.fail(new NoOp({ message }))

/** Fails with every reason at once (docs/contract.md 7: `validation_errors` lists them all), or succeeds when none. */
export const requireNone = (reasons: ReadonlyArray<string>): Effect.Effect<void, ValidationFailed> =>
  reasons.length === 0
    ? Effect.void
    : Effect.fail(new ValidationFailed({ message: "the change does not fit the account's state", validation_errors: reasons }))

/** The policy rule that clears the action, or the one that holds it for review. */
export const clears = (rule: string): Verdict => ({ clears: true, rule })
export const holds = (rule: string): Verdict => ({ clears: false, rule })

/** Micros as a readable amount for summaries and reasons: `12.5 USD`. */
export const money = (micros: number | null, currency: string): string =>
  micros === null ? "none" : `${decimalFromMicros(micros)} ${currency}`

/** The change from `prior` to `next` in percent, signed, one decimal: `+12.5%`, `-30.0%`. */
export const percent = (prior: number, next: number): string => {
  const value = Math.round(((next - prior) / prior) * 1000) / 10
  return `${value > 0 ? "+" : ""}${value.toFixed(1)}%`
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

export interface FieldChange<E, F> {
  readonly name: string
  /** What the entity is, for drift reasons: `campaign 123`. */
  readonly label: string
  readonly read: (context: StepContext) => Effect.Effect<E, UpstreamFailure>
  /** The fields the change sets, as they are on an entity. */
  readonly fields: (entity: E) => F
  readonly prior: F
  readonly target: F
  readonly write: (context: StepContext) => Effect.Effect<E, UpstreamFailure>
  readonly touched: (entity: E) => Touched
}

/** Drift of a one-entity change: the upstream holds neither the prior state nor the target. */
export const fieldDrift = <E, F>(change: FieldChange<E, F>) => (context: StepContext) =>
  change.read(context).pipe(Effect.map((entity) => {
    const current = change.fields(entity)
    return same(current, change.prior) || same(current, change.target)
      ? null
      : `${change.label} changed outside acs: it is now ${JSON.stringify(current)} upstream; acs recorded ${
        JSON.stringify(change.prior)
      } at proposal`
  }))

/** The step of a one-entity change: read, then done / write / drift (see `Step`). */
export const fieldStep = <E, F>(change: FieldChange<E, F>): Step => ({
  name: change.name,
  apply: (context) =>
    Effect.gen(function*() {
      const entity = yield* change.read(context)
      const current = change.fields(entity)
      if (same(current, change.target)) return { ids: {}, touched: change.touched(entity), warnings: [] }
      const drifted = !same(current, change.prior)
      if (drifted && !context.acceptDrift) {
        const reason = yield* fieldDrift(change)(context)
        return yield* new Drift({ reason: reason ?? `${change.label} changed outside acs` })
      }
      const written = yield* change.write(context)
      const warnings = drifted ? [`overwrote a change made outside acs: ${change.label} was ${JSON.stringify(current)}`] : []
      return { ids: {}, touched: change.touched(written), warnings }
    })
})

/** docs/contract.md 3.1 "at most N%" in integer arithmetic, inclusive: |next − prior| × 100 ≤ N × prior. */
export const withinPercent = (prior: number, next: number, bound: number): boolean =>
  Math.abs(next - prior) * 100 <= bound * prior

/** The target CPA a bid strategy takes: MAX_CONVERSIONS needs one (400 naming the field), MANUAL_CPT takes none. */
export const targetCpaFor = (
  bidStrategy: "MANUAL_CPT" | "MAX_CONVERSIONS",
  targetCpaMicros: number | undefined
): Effect.Effect<number | null, InvalidRequest> => {
  if (bidStrategy === "MAX_CONVERSIONS") {
    return targetCpaMicros === undefined
      ? Effect.fail(new InvalidRequest({ message: "targetCpaMicros is required when bidStrategy is MAX_CONVERSIONS" }))
      : Effect.succeed(targetCpaMicros)
  }
  return targetCpaMicros === undefined
    ? Effect.succeed(null)
    : Effect.fail(new InvalidRequest({ message: "targetCpaMicros applies only to MAX_CONVERSIONS; leave it out for MANUAL_CPT" }))
}

/** One warning per failed row of a bulk call (a row may carry several errors), naming the row and why. */
export const rowWarnings = <A>(result: BulkResult<A>, describe: (index: number) => string): Array<string> => {
  const byRow = new Map<number, Array<string>>()
  for (const row of result.failed) byRow.set(row.index, [...(byRow.get(row.index) ?? []), row.message])
  return [...byRow].map(([index, messages]) => `${describe(index)}: ${messages.join("; ")}`)
}

/** A bulk step applied nothing when no row worked (docs/contract.md 3: `applied` needs one row), so it fails. */
export const someRowWorked = (worked: number, warnings: ReadonlyArray<string>): Effect.Effect<void, StepRefused> =>
  worked > 0 ? Effect.void : Effect.fail(new StepRefused({ message: `every row failed: ${warnings.join("; ")}` }))
