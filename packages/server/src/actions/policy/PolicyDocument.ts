/** The live policy of an account (`GET /accounts/{projectId}/policy`, docs/contract.md 2.5). */
import type { PolicyDocument as Document } from "@acs/domain/Actions"
import { Effect } from "effect"
import type { Granted } from "../../auth/Access.ts"
import { autoAppliesLast24h } from "../../policy/AutoApplyWindow.ts"
import { AUTO_APPLY_LIMIT_PER_24H, BUDGET_HARD_CAP_MULTIPLE } from "../../policy/Policy.ts"
import { OrgSettings } from "../../settings/Settings.ts"
import { catalog } from "../kinds/Catalog.ts"

export class PolicyDocument extends Effect.Service<PolicyDocument>()("acs/PolicyDocument", {
  effect: Effect.gen(function*() {
    const settings = yield* OrgSettings

    const get = (grant: Granted<"getPolicy">) =>
      Effect.gen(function*() {
        const [switchState, window] = yield* Effect.all([settings.read(grant.orgId), autoAppliesLast24h(grant.account.projectId)])
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
          hardCaps: { budgetMultipleOfWarehouse: BUDGET_HARD_CAP_MULTIPLE }
        }
        return document
      }).pipe(Effect.withSpan("Policy.get"))

    return { get } as const
  })
}) {}
