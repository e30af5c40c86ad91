/** The live policy of an account (`GET /accounts/{projectId}/policy`, docs/contract.md 2.5). */
import type { PolicyDocument as Document } from "@acs/domain/Actions"
import { Effect } from "effect"
import type { Granted } from "../../auth/Access.ts"
import { accountEnvelope, autoAppliesLast24h } from "../../policy/AutoApplyWindow.ts"
import { Guardrails } from "../../policy/Guardrails.ts"
import { AUTO_APPLY_LIMIT_PER_24H, BUDGET_HARD_CAP_MULTIPLE } from "../../policy/Policy.ts"
import { OrgSettings } from "../../settings/Settings.ts"
import { catalog } from "../kinds/Catalog.ts"

export class PolicyDocument extends Effect.Service<PolicyDocument>()("acs/PolicyDocument", {
  effect: Effect.gen(function*() {
    const settings = yield* OrgSettings
    const guardrails = yield* Guardrails

    const get = (grant: Granted<"getPolicy">) =>
      Effect.gen(function*() {
        const projectId = grant.account.projectId
        const [switchState, window, rails, { state }] = yield* Effect.all([
          settings.read(grant.orgId),
          autoAppliesLast24h(projectId),
          guardrails.read(projectId),
          accountEnvelope(projectId)
        ])
        const document: Document = {
          killSwitch: { setting: "platformAutoApply", enabled: switchState.platformAutoApply },
          accountStatus: grant.account.status,
          autoApplies: {
            limitPer24h: AUTO_APPLY_LIMIT_PER_24H,
            usedLast24h: window.used,
            remaining: Math.max(0, AUTO_APPLY_LIMIT_PER_24H - window.used),
            oldestInWindowAt: window.oldestInWindowAt
          },
          keyProposals: "always_review",
          rules: catalog.filter((kind) => kind.declaration !== undefined).map((kind) => ({ kind: kind.kind, autoApplies: kind.rule })),
          hardCaps: { budgetMultipleOfWarehouse: BUDGET_HARD_CAP_MULTIPLE },
          guardrails: rails,
          envelope: {
            maxIncrease24h: state.maxIncrease,
            used: state.used,
            reserved: state.reserved,
            remaining: Math.max(0, state.maxIncrease - state.used - state.reserved),
            totalDailyBudget: state.total,
            maxTotal: state.maxTotal
          }
        }
        return document
      }).pipe(Effect.withSpan("Policy.get"))

    return { get } as const
  })
}) {}
