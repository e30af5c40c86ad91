/**
 * Changesets (docs/contract.md 4.3): proposals grouped into one unit with one preview, one decision, one apply
 * and one revert. A member is an action of the ledger with its `changesetId`.
 */
import { Schema } from "effect"
import { ActionRecord, Actor, Approval, Mode, RiskTier } from "./Actions.ts"
import { ActionKind, ProposalKindLiteral } from "./ProposalKinds.ts"
import { LimitParam } from "./Warehouse.ts"

export const ChangesetStatus = Schema.Literal(
  "open",
  "submitted",
  "queued",
  "approved",
  "applying",
  "applied",
  "partially_applied",
  "failed",
  "rejected",
  "expired",
  "reverted"
)
export type ChangesetStatus = typeof ChangesetStatus.Type

/** What the apply does when a member fails: stop (the rest skipped), continue, or roll the applied members back. */
export const OnFailure = Schema.Literal("stop", "continue", "rollback")
export type OnFailure = typeof OnFailure.Type

/** The most members a changeset holds, and the most one `members` call adds. */
export const CHANGESET_MAX_MEMBERS = 5000
export const MEMBERS_PER_CALL = 1000

export const OpenChangesetRequest = Schema.Struct({
  title: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)).annotations({
    description: "What the changes do together, shown to reviewers"
  }),
  reason: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2000)).annotations({ description: "Why, shown to reviewers" })),
  onFailure: Schema.optional(OnFailure.annotations({ description: "Default stop: a failed member skips the rest" }))
}).annotations({ identifier: "OpenChangesetRequest" })

/** The frozen plan: the apply order (parents before children, then `dependsOn`) and each member's dependencies. */
export const ChangesetPlan = Schema.Struct({
  order: Schema.Array(Schema.String),
  dependencies: Schema.Array(Schema.Struct({ actionId: Schema.String, dependsOn: Schema.Array(Schema.String) }))
}).annotations({ identifier: "ChangesetPlan" })
export type ChangesetPlan = typeof ChangesetPlan.Type

/** What the whole changes: the net daily-budget change, members by kind and by campaign. */
export const ChangesetImpact = Schema.Struct({
  dailyBudgetDeltaMicros: Schema.Int,
  byKind: Schema.Record({ key: Schema.String, value: Schema.Int }),
  byCampaign: Schema.Array(Schema.Struct({
    campaignId: Schema.NullOr(Schema.String).annotations({ description: "null: members that name no campaign (a new campaign)" }),
    members: Schema.Int,
    dailyBudgetDeltaMicros: Schema.Int
  }))
}).annotations({ identifier: "ChangesetImpact" })
export type ChangesetImpact = typeof ChangesetImpact.Type

/** The policy's decision for the whole: auto-applied only when every member would and all fit the 24-hour window. */
export const ChangesetDecision = Schema.Struct({
  mode: Mode,
  riskTier: RiskTier,
  policyReasons: Schema.Array(Schema.String)
}).annotations({ identifier: "ChangesetDecision" })
export type ChangesetDecision = typeof ChangesetDecision.Type

export const MemberCounts = Schema.Struct({
  total: Schema.Int,
  applied: Schema.Int,
  failed: Schema.Int,
  skipped: Schema.Int,
  reverted: Schema.Int.annotations({ description: "Applied, then undone (by a revert or a rollback)" }),
  pending: Schema.Int.annotations({ description: "Members still waiting for the decision or the apply" })
}).annotations({ identifier: "MemberCounts" })
export type MemberCounts = typeof MemberCounts.Type

export const Changeset = Schema.Struct({
  changesetId: Schema.String,
  projectId: Schema.String,
  title: Schema.String,
  reason: Schema.NullOr(Schema.String),
  onFailure: OnFailure,
  status: ChangesetStatus,
  openedBy: Actor,
  createdAt: Schema.String,
  submittedAt: Schema.NullOr(Schema.String),
  decidedBy: Schema.NullOr(Actor),
  decidedAt: Schema.NullOr(Schema.String),
  approvals: Schema.Array(Approval).annotations({
    description: "Who approved, when; high risk needs two"
  }),
  decisionReason: Schema.NullOr(Schema.String),
  appliedAt: Schema.NullOr(Schema.String),
  planHash: Schema.NullOr(Schema.String).annotations({ description: "Set by submit; an approval names it" }),
  plan: Schema.NullOr(ChangesetPlan),
  impact: Schema.NullOr(ChangesetImpact),
  decision: Schema.NullOr(ChangesetDecision),
  members: MemberCounts,
  revertOf: Schema.NullOr(Schema.String),
  revertedBy: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Changeset" })
export type Changeset = typeof Changeset.Type

/** One changeset with its members, in plan order once submitted (else in the order they were added). */
export const ChangesetDetail = Schema.Struct({
  changeset: Changeset,
  memberActions: Schema.Array(ActionRecord)
}).annotations({ identifier: "ChangesetDetail" })
export type ChangesetDetail = typeof ChangesetDetail.Type

export const ChangesetList = Schema.Struct({
  changesets: Schema.Array(Changeset),
  total: Schema.Int
}).annotations({ identifier: "ChangesetList" })

export const ChangesetListParams = Schema.Struct({
  status: Schema.optional(ChangesetStatus.annotations({ description: "Only this status" })),
  limit: Schema.optional(LimitParam)
})

/** Many members in one call: each a proposal kind and the body its endpoint takes (without `changesetId`). */
export const AddMembersRequest = Schema.Struct({
  proposals: Schema.Array(Schema.Struct({
    kind: ProposalKindLiteral.annotations({ description: "Proposal kind" }),
    body: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
      description: "The kind's own proposal fields, with `reason`, without `changesetId`"
    })
  })).pipe(Schema.minItems(1), Schema.maxItems(MEMBERS_PER_CALL)).annotations({ description: "Proposals to add" })
}).annotations({ identifier: "AddMembersRequest" })
export type AddMembersRequest = typeof AddMembersRequest.Type

/** One proposal of a `members` call: its member, or why it was refused (the envelope's code and message). */
export const MemberResult = Schema.Struct({
  index: Schema.Int,
  status: Schema.Int.annotations({ description: "201 recorded; otherwise the status its own proposal would have answered" }),
  actionId: Schema.NullOr(Schema.String).annotations({ description: "The member; on a 422, the failed row's id" }),
  kind: ActionKind,
  summary: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    validationErrors: Schema.Array(Schema.String)
  }))
}).annotations({ identifier: "MemberResult" })
export type MemberResult = typeof MemberResult.Type

export const AddMembersResponse = Schema.Struct({
  changesetId: Schema.String,
  added: Schema.Int,
  refused: Schema.Int,
  results: Schema.Array(MemberResult)
}).annotations({ identifier: "AddMembersResponse" })
export type AddMembersResponse = typeof AddMembersResponse.Type

export const ApproveChangesetRequest = Schema.Struct({
  planHash: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128)).annotations({
    description: "The planHash the approver reviewed: a changeset resubmitted since is refused (409)"
  })
}).annotations({ identifier: "ApproveChangesetRequest" })

export const RejectChangesetRequest = Schema.Struct({
  reason: Schema.optional(Schema.String.pipe(Schema.maxLength(2000)).annotations({ description: "Why, shown to the opener" }))
}).annotations({ identifier: "RejectChangesetRequest" })

/** A member's fate in a revert: undone, left alone because it moved since (unless forced), or not undoable. */
export const RevertVerdict = Schema.Literal("revertible", "conflicted", "not_revertible")

export const RevertPlanMember = Schema.Struct({
  actionId: Schema.String,
  kind: ActionKind,
  summary: Schema.String,
  verdict: RevertVerdict,
  why: Schema.String.annotations({
    description: "For conflicted: what moved it since acs wrote it, by whom and when; for not_revertible: why not"
  }),
  compensation: Schema.NullOr(Schema.Struct({ kind: ActionKind, summary: Schema.String }))
}).annotations({ identifier: "RevertPlanMember" })

/**
 * What a changeset's revert undoes, from a three-way check per member: its prior state, what acs wrote, and what
 * is upstream now (read again, not the warehouse).
 */
export const RevertPlan = Schema.Struct({
  changesetId: Schema.String,
  coverage: Schema.Literal("full", "partial", "none").annotations({
    description: "full: every applied member is undone; partial: some are; none: nothing would be"
  }),
  members: Schema.Array(RevertPlanMember)
}).annotations({ identifier: "RevertPlan" })
export type RevertPlan = typeof RevertPlan.Type

export const RevertChangesetRequest = Schema.Struct({
  force: Schema.optional(Schema.Array(Schema.String).pipe(Schema.maxItems(CHANGESET_MAX_MEMBERS)).annotations({
    description: "Conflicted members to undo anyway, writing over what changed since"
  }))
}).annotations({ identifier: "RevertChangesetRequest" })

/** A revert: the compensating changeset (applied at once) and the plan it follows. */
export const ChangesetRevert = Schema.Struct({
  changeset: Changeset,
  plan: RevertPlan
}).annotations({ identifier: "ChangesetRevert" })
