/** The action ledger's records, the proposal answer, approvals, the policy document and the target band. */
import { Schema } from "effect"
import { DataFreshness } from "./Accounts.ts"
import { CallerMay, Root } from "./FourEyes.ts"
import { Timestamp } from "./Dates.ts"
import { EnvelopeUse, Guardrails } from "./Guardrails.ts"
import { Verdict, Watch } from "./Guard.ts"
import { jsonObject } from "./Json.ts"
import { ActionKind, type ActionKindName } from "./ProposalKinds.ts"
import { IntegerParam, LimitParam } from "./Warehouse.ts"

/** `skipped`: a changeset's member that was never applied (a dependency failed, or the apply stopped first). */
export const ActionStatus = Schema.Literal(
  "proposed",
  "approved",
  "applying",
  "applied",
  "failed",
  "rejected",
  "reverted",
  "expired",
  "skipped"
)
export type ActionStatus = typeof ActionStatus.Type

export const Mode = Schema.Literal("auto_applied", "queued")
export type Mode = typeof Mode.Type

export const RiskTier = Schema.Literal("safe", "review", "high")
export type RiskTier = typeof RiskTier.Type

/** `external`: someone outside acs (a web-UI user, another API client, Apple support), by the platform's name. */
export const Actor = Schema.Struct({
  kind: Schema.Literal("key", "person", "system", "external"),
  id: Schema.String,
  name: Schema.String,
  root: Schema.optional(Root.annotations({
    description: "Who stands behind the key or person (four eyes compares roots); absent for the system and outside changes"
  }))
}).annotations({ identifier: "Actor" })
export type Actor = typeof Actor.Type

export const Approval = Schema.Struct({ by: Actor, at: Schema.String }).annotations({ identifier: "Approval" })
export type Approval = typeof Approval.Type

export const Failure = Schema.Struct({
  step: Schema.NullOr(Schema.Int).annotations({ description: "1-based step of a composite that failed; null otherwise" }),
  stepName: Schema.NullOr(Schema.String),
  message: Schema.String,
  upstreamRequestId: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ActionFailure" })
export type Failure = typeof Failure.Type

/** What the proposal endpoints answer (docs/contract.md 4), plus `replayed` on an idempotent replay. */
export const ProposalResponse = Schema.Struct({
  actionId: Schema.String,
  kind: ActionKind,
  mode: Mode,
  status: ActionStatus,
  riskTier: RiskTier,
  policyReasons: Schema.Array(Schema.String),
  summary: Schema.String,
  replayed: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "ProposalResponse" })
export type ProposalResponse = typeof ProposalResponse.Type

/**
 * What a proposal endpoint answers with `?preview=true` (docs/contract.md 4.1): what the proposal
 * would record — the mode and risk tier the policy gives it now, its reasons, summary and payload (prior
 * state included) — with nothing written. No `actionId`: there is no action.
 */
export const ProposalPreview = Schema.Struct({
  kind: ActionKind,
  mode: Mode,
  riskTier: RiskTier,
  policyReasons: Schema.Array(Schema.String),
  summary: Schema.String,
  payload: jsonObject("What the action would record: the request plus the prior* state needed to revert")
}).annotations({ identifier: "ProposalPreview", description: "A proposal's dry run: what would be recorded, nothing written" })
export type ProposalPreview = typeof ProposalPreview.Type

/** A proposal endpoint answers the proposal, or its preview when `?preview=true` was sent: which one this is. */
export const isProposalResponse = (answer: ProposalResponse | ProposalPreview): answer is ProposalResponse => "actionId" in answer

/** `?preview=true` on a proposal endpoint: validate and run the policy, answer 200, write nothing. */
export const PreviewParams = Schema.Struct({
  preview: Schema.optional(Schema.BooleanFromString.annotations({
    jsonSchema: {
      type: "boolean",
      default: false,
      description: "true: dry run, records nothing"
    }
  }))
})

export const ActionRecord = Schema.Struct({
  actionId: Schema.String,
  projectId: Schema.String,
  kind: ActionKind,
  mode: Schema.NullOr(Mode).annotations({ description: "Snapshot at proposal; null on a row that failed local validation" }),
  status: ActionStatus,
  riskTier: RiskTier,
  policyReasons: Schema.Array(Schema.String),
  summary: Schema.String,
  reason: Schema.String,
  payload: jsonObject("The request plus the prior* state needed to revert"),
  result: Schema.NullOr(jsonObject("Ids the apply created (composites, added keywords)")),
  warnings: Schema.Array(Schema.String),
  failure: Schema.NullOr(Failure),
  proposedBy: Actor,
  decidedBy: Schema.NullOr(Actor),
  decisionReason: Schema.NullOr(Schema.String),
  approvals: Schema.Array(Approval).annotations({
    description: "Who approved it and when; a high-risk change (docs/contract.md 3.3) stays queued after the first of two"
  }),
  created_at: Schema.String.annotations({ description: "ISO 8601 with microseconds; the ledger orders by it" }),
  decidedAt: Schema.NullOr(Schema.String),
  appliedAt: Schema.NullOr(Schema.String),
  revertOf: Schema.NullOr(Schema.String),
  revertedBy: Schema.NullOr(Schema.String),
  supersededBy: Schema.NullOr(Schema.String).annotations({
    description: "The external_change that changed this action's entity outside acs after it applied; its revert then queues for review"
  }),
  changesetId: Schema.NullOr(Schema.String).annotations({ description: "The changeset this action is a member of" }),
  dependsOn: Schema.Array(Schema.String).annotations({ description: "Members of its changeset that apply before it" }),
  // The guard's watch of an applied bid, budget, status or keyword change (docs/contract.md 3.4); not described here:
  // the MCP tool list's size is budgeted (docs/decisions/surfaces.md) and Watch describes itself.
  watch: Schema.optional(Watch)
}).annotations({ identifier: "ActionRecord" })

/** Who made a change outside acs, as the platform's change history says. */
export const ExternalUserType = Schema.Literal("CUSTOMER", "CUSTOMER_API", "APPLE_SUPPORT")

/** The payload of an `external_change` row: the entity, the fields that changed, and where the platform recorded it. */
export const ExternalChangePayload = Schema.Struct({
  entity: Schema.Struct({
    type: Schema.Literal("campaign", "adGroup", "keyword", "negativeKeyword", "ad", "other"),
    /** The platform's entity type name when `type` is `other`, else the same in the platform's words. */
    platformType: Schema.String,
    id: Schema.String,
    campaignId: Schema.NullOr(Schema.String),
    adGroupId: Schema.NullOr(Schema.String),
    name: Schema.NullOr(Schema.String)
  }),
  eventType: Schema.String,
  changes: Schema.Array(Schema.Struct({
    field: Schema.String.annotations({ description: "acs's field name where one matches (dailyBudgetMicros, bidMicros…), else the platform's" }),
    oldValue: Schema.Unknown,
    newValue: Schema.Unknown
  })),
  upstream: Schema.Struct({
    detailId: Schema.String,
    transactionId: Schema.String,
    eventTime: Schema.String,
    userType: ExternalUserType,
    modifiedBy: Schema.String
  })
}).annotations({ identifier: "ExternalChangePayload" })
export type ExternalChangePayload = typeof ExternalChangePayload.Type
export type ActionRecord = typeof ActionRecord.Type

/** The ledger's page as the server's Ledger.ts serves it (`LEDGER_*_LIMIT`; contractLint.test.ts compares). */
/** A ledger page: 50 actions unless asked, never more than 500. */
export const LEDGER_DEFAULT_LIMIT = 50
export const LEDGER_MAX_LIMIT = 500

export const LedgerParams = Schema.Struct({
  limit: Schema.optional(IntegerParam(Schema.Int, {
    minimum: 1,
    maximum: LEDGER_MAX_LIMIT,
    default: LEDGER_DEFAULT_LIMIT,
    description: `Max rows; clamped to 1–${LEDGER_MAX_LIMIT}`
  })),
  // Kept as text: the cursor has microseconds, more than a JavaScript Date holds.
  before: Schema.optional(Timestamp),
  status: Schema.optional(ActionStatus.annotations({ description: "Only this status" })),
  // A kind, checked (400 otherwise) but listed as a string: the proposal tools name the kinds (the MCP tool list's
  // size is budgeted: docs/decisions/surfaces.md).
  kind: Schema.optional(Schema.String.annotations({ description: "Only this kind, e.g. budget_change" }).pipe(
    Schema.filter((text): text is ActionKindName => Schema.is(ActionKind)(text), {
      message: () => "kind: an action kind, e.g. budget_change"
    })
  )),
  origin: Schema.optional(Schema.Literal("acs", "external").annotations({ description: "external: changed outside acs" })),
  proposedBy: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(320)).annotations({
    description: "keyId, personId or outside modifier"
  })),
  // A Verdict, checked (400 otherwise) but listed as a string: the MCP tool list's size is budgeted (docs/decisions/surfaces.md).
  verdict: Schema.optional(Schema.String.annotations({ description: "Only this guard verdict, e.g. failed" }).pipe(
    Schema.filter((text): text is Verdict => (Verdict.literals as ReadonlyArray<string>).includes(text), {
      message: () => `verdict: one of ${Verdict.literals.join(", ")}`
    })
  ))
})

export const ActionList = Schema.Struct({
  actions: Schema.Array(ActionRecord),
  nextBefore: Schema.NullOr(Schema.String).annotations({
    description: "Pass as `before` for the next page; null on the last page"
  })
}).annotations({ identifier: "ActionList" })

/** A pending action as the approvals listing shows it to one caller: the record, and what that caller may do with it. */
export const PendingAction = Schema.extend(ActionRecord, Schema.Struct({ callerMay: CallerMay })).annotations({
  identifier: "PendingAction"
})
export type PendingAction = typeof PendingAction.Type

export const ApprovalList = Schema.Struct({
  approvals: Schema.Array(PendingAction),
  total: Schema.Int,
  truncated: Schema.Boolean,
  dataFreshness: DataFreshness
}).annotations({ identifier: "ApprovalList" })

export const ApprovalParams = Schema.Struct({ limit: Schema.optional(LimitParam) })

const RejectFields = Schema.Struct({
  reason: Schema.optional(Schema.String.pipe(Schema.maxLength(2000)).annotations({ description: "Why, shown to the proposer" }))
})

/** The reason is optional, and so is the body: a POST with none (JSON `null`) rejects without a reason. */
export const RejectRequest = Schema.transform(Schema.NullOr(RejectFields), Schema.typeSchema(RejectFields), {
  strict: true,
  decode: (body) => body ?? {},
  encode: (request) => request
}).annotations({ identifier: "RejectRequest" })

export const Band = Schema.Struct({
  minMicros: Schema.Int.pipe(Schema.nonNegative()),
  maxMicros: Schema.Int.pipe(Schema.positive())
}).pipe(
  Schema.filter((band) => band.minMicros <= band.maxMicros || "minMicros must not exceed maxMicros")
).annotations({ identifier: "CpaBand" })
export type Band = typeof Band.Type

export const Targets = Schema.Struct({
  cpaBand: Schema.NullOr(Band).annotations({ description: "The account-wide CPA target band" }),
  campaigns: Schema.Record({ key: Schema.String, value: Band }).annotations({
    description: "Per-campaign bands, by campaignId; they win over the account band"
  })
}).annotations({ identifier: "Targets" })
export type Targets = typeof Targets.Type

export const PolicyDocument = Schema.Struct({
  killSwitch: Schema.Struct({ setting: Schema.Literal("platformAutoApply"), enabled: Schema.Boolean }),
  accountStatus: Schema.String,
  autoApplies: Schema.Struct({
    limitPer24h: Schema.Int,
    usedLast24h: Schema.Int,
    remaining: Schema.Int,
    oldestInWindowAt: Schema.NullOr(Schema.String)
  }),
  keyProposals: Schema.Literal("always_review"),
  rules: Schema.Array(Schema.Struct({ kind: Schema.String, autoApplies: Schema.String })),
  hardCaps: Schema.Struct({ budgetMultipleOfWarehouse: Schema.Int }),
  guardrails: Guardrails,
  envelope: EnvelopeUse
}).annotations({ identifier: "PolicyDocument" })
export type PolicyDocument = typeof PolicyDocument.Type
