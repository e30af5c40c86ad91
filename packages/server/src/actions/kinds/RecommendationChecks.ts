/**
 * What applying and dismissing one of Apple's recommendations both check (docs/contract.md 4.5), at proposal and again
 * at apply: that the account has it (else 404 `not_found`, as for any entity it lacks), and that it can still be
 * acted on (else 422 `validation_failed` saying why: expired, or already applied or dismissed).
 */
import { NotFound } from "@acs/domain/Errors"
import { Clock, Effect } from "effect"
import { isExpired, type RecommendationRow } from "../../warehouse/Recommendations.ts"
import { requireNone } from "./KindSupport.ts"
import type { WarehouseView } from "./WarehouseView.ts"

/** Why the recommendation cannot be acted on now; none when it can. */
export const actionableReasons = (recommendation: RecommendationRow) =>
  Effect.map(Clock.currentTimeMillis, (now): ReadonlyArray<string> =>
    recommendation.state !== "available"
      ? [`recommendationId: recommendation ${recommendation.recommendationId} was already ${recommendation.state}`]
      : isExpired(recommendation, now)
      ? [`recommendationId: recommendation ${recommendation.recommendationId} expired at ${recommendation.expiresAt}`]
      : [])

/** The recommendation, known and still actionable, or the 422 saying why not. */
export const actionableRecommendation = (view: WarehouseView, recommendationId: string) =>
  Effect.gen(function*() {
    const recommendation = yield* view.recommendation(recommendationId)
    if (recommendation === undefined) {
      return yield* new NotFound({ message: `no recommendation ${recommendationId} in this account (GET …/recommendations lists them)` })
    }
    yield* requireNone(yield* actionableReasons(recommendation))
    return recommendation
  })
