/**
 * What one action kind is to the pipeline (one module per kind, docs/contract.md 2.1): how a request becomes a payload with
 * its prior* state, which policy rule clears it, the upstream steps that apply it, and its inverse.
 */
import type { RiskTier } from "@acs/domain/Actions"
import type { BidStrategyConflict, InvalidRequest, NoOp, NotFound, ValidationFailed } from "@acs/domain/Errors"
import type { KindName, ProposalKind } from "@acs/domain/ProposalKinds"
import type {
  UpstreamAd,
  UpstreamAdGroup,
  UpstreamCampaign,
  UpstreamClient,
  KeywordChange,
  MatchType,
  NewKeyword,
  UpstreamFailure,
  UpstreamKeyword,
  UpstreamNegativeKeyword
} from "@acs/upstream/Upstream"
import { Data, type Effect, type Schema } from "effect"
import type { Verdict } from "../../policy/Policy.ts"
import type { PolicyFacts } from "./PolicyFacts.ts"
import type { WarehouseView } from "./WarehouseView.ts"

/** A local validation failure: answered to the caller; `ValidationFailed` also leaves a failed ledger row. */
export type Rejection = NotFound | NoOp | BidStrategyConflict | ValidationFailed | InvalidRequest

/** Ids an apply produced, by name (`campaignId`, `keywordIds`, …): what later steps and the inverse use. */
export type Ids = Readonly<Record<string, string | ReadonlyArray<string>>>

/** Upstream entities an apply created or changed, and ids it removed: written back into the warehouse. */
export interface Touched {
  readonly campaigns?: ReadonlyArray<UpstreamCampaign>
  readonly adGroups?: ReadonlyArray<UpstreamAdGroup>
  readonly keywords?: ReadonlyArray<UpstreamKeyword>
  readonly negativeKeywords?: ReadonlyArray<UpstreamNegativeKeyword>
  readonly ads?: ReadonlyArray<UpstreamAd>
  readonly removedCampaigns?: ReadonlyArray<string>
  readonly removedAdGroups?: ReadonlyArray<string>
  readonly removedKeywords?: ReadonlyArray<string>
  readonly removedNegativeKeywords?: ReadonlyArray<string>
}

export interface StepResult {
  readonly ids: Ids
  readonly touched: Touched
  /** Per-row failures of a bulk call that partly worked. */
  readonly warnings: ReadonlyArray<string>
}

/** The entity no longer holds the prior state recorded at proposal: someone changed it outside acs. */
export class Drift extends Data.TaggedError("Drift")<{ readonly reason: string }> {}

/** Every row of a bulk call failed, or the call's outcome leaves nothing applied. */
export class StepRefused extends Data.TaggedError("StepRefused")<{ readonly message: string }> {}

export type StepFailure = UpstreamFailure | Drift | StepRefused

export interface StepContext {
  readonly client: UpstreamClient
  /** The upstream account (org) id. */
  readonly accountId: string
  /** Ids produced by the steps before this one. */
  readonly ids: Ids
  /**
   * A person approved the action after it was held for drift: a one-entity change then writes over the
   * outside change (with a warning saying what it overwrote) instead of demoting again.
   */
  readonly acceptDrift: boolean
}

/** Where an entity stands against an edit: already at the target, still at the prior value, or moved (why). */
export type Standing = "done" | "pending" | { readonly drift: string }

/** One keyword's edit with its field erased: a row of the platform's bulk update. */
export interface KeywordRow {
  readonly keywordId: string
  readonly adGroupId: string
  readonly campaignId: string
  readonly text: string
  readonly standing: (current: UpstreamKeyword | undefined) => Standing
  readonly change: KeywordChange
}

/** A negative keyword to create, with its place (a campaign, or one of its ad groups) and their names. */
export interface NegativeRow {
  readonly campaignId: string
  readonly campaignName: string
  readonly adGroupId: string | null
  readonly adGroupName: string | null
  readonly text: string
  readonly matchType: MatchType
}

/**
 * A step's upstream work as one read of a place and one bulk write of rows there (BulkParts.ts): the step applies
 * its part alone, and a changeset's members whose parts share a place share the read and the call
 * (worker/MemberBulk.ts). `idKey`: where the result records row `index`'s new id.
 */
export type BulkPart =
  | { readonly _tag: "UpdateKeywords"; readonly rows: ReadonlyArray<KeywordRow> }
  | {
    readonly _tag: "CreateKeywords"
    readonly campaignId: string
    readonly adGroupId: string
    readonly rows: ReadonlyArray<NewKeyword>
    readonly idKey: (index: number) => string
  }
  | { readonly _tag: "CreateNegatives"; readonly rows: ReadonlyArray<NegativeRow>; readonly idKey: (index: number) => string }

/**
 * One upstream write. `apply` reads the upstream first: already in the target state (a crash after the
 * call) → done without writing; still in the prior state → write; anything else → `Drift`. So a step whose
 * outcome was not recorded is reconciled by reading, never repeated blindly.
 */
export interface Step {
  readonly name: string
  readonly apply: (context: StepContext) => Effect.Effect<StepResult, StepFailure>
  /** Undoes a completed step when a later step of a composite fails (best effort). */
  readonly undo?: (context: StepContext) => Effect.Effect<Touched, UpstreamFailure>
  /** The step's work as a part of a bulk call, which other actions' parts may share. */
  readonly bulk?: BulkPart
}

// The kind's rule reads the facts and answers in the policy's terms (policy sits below actions).
export type { PolicyFacts, Verdict }

export interface Prepared<P> {
  readonly payload: P
  readonly summary: string
}

/** The compensating change of an applied action. */
export interface Inverse {
  readonly kind: KindName
  readonly payload: unknown
  readonly summary: string
}

export interface KindDefinition<P = unknown> {
  readonly kind: KindName
  /** The proposal endpoint's declaration; absent for kinds that exist only as a revert's compensation. */
  readonly declaration?: ProposalKind
  /** The tier when the policy does not clear it; `high` kinds always need review (docs/contract.md 3, reason 4). */
  readonly reviewTier: Exclude<RiskTier, "safe">
  /** The auto-apply rule in words, for the policy document. */
  readonly rule: string
  readonly composite: boolean
  /** The stored payload (request fields plus prior*), decoded again by the worker. */
  readonly payload: Schema.Schema<P, P>
  /** Local validation at proposal against the warehouse: the payload with its prior state. */
  readonly prepare: (body: unknown, view: WarehouseView) => Effect.Effect<Prepared<P>, Rejection>
  /** Local validation again at apply, against the warehouse as it is now. */
  readonly recheck: (payload: P, view: WarehouseView) => Effect.Effect<void, Rejection>
  readonly autoApply: (payload: P, facts: PolicyFacts) => Effect.Effect<Verdict>
  readonly steps: (payload: P) => ReadonlyArray<Step>
  /** Reads the upstream: a reason when the entities no longer hold the payload's prior state. */
  readonly drift: (payload: P, context: StepContext) => Effect.Effect<string | null, UpstreamFailure>
  /**
   * A compensation's items that moved since the original wrote them without anything left to overwrite (removed
   * outside acs): the revert still applies at once, naming each (`conflicted: …`) in its policy reasons.
   */
  readonly conflicts?: (payload: P, context: StepContext) => Effect.Effect<ReadonlyArray<string>, UpstreamFailure>
  /** Absent: the kind cannot be reverted (422 `not_revertible`). */
  readonly inverse?: (payload: P, ids: Ids) => Inverse
  /** The campaign whose budget the apply must hard-cap (docs/contract.md 8), with the new budget. */
  readonly budgetChange?: (payload: P) => { readonly campaignId: string; readonly newDailyBudgetMicros: number }
}

/** A definition with its payload type hidden, so the catalog can hold all of them (an existential). */
export interface Kind {
  readonly kind: KindName
  readonly declaration: ProposalKind | undefined
  readonly reviewTier: Exclude<RiskTier, "safe">
  readonly rule: string
  readonly composite: boolean
  readonly revertible: boolean
  readonly use: <R>(f: <P>(definition: KindDefinition<P>) => R) => R
}

export const defineKind = <P>(definition: KindDefinition<P>): Kind => ({
  kind: definition.kind,
  declaration: definition.declaration,
  reviewTier: definition.reviewTier,
  rule: definition.rule,
  composite: definition.composite,
  revertible: definition.inverse !== undefined,
  use: (f) => f(definition)
})
