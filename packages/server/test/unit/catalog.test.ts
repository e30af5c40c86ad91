/**
 * The kind catalog against the declarations the API is generated from: every proposal kind and every
 * revert-only kind has exactly one behaviour module, and each revertible kind's inverse names a kind the
 * catalog knows (docs/contract.md 2.1).
 */
import { compensationKinds, proposalKinds } from "@acs/domain/ProposalKinds"
import { describe, expect, it } from "vitest"
import { catalog, kindNamed } from "../../src/actions/kinds/Catalog.ts"

describe("the kind catalog", () => {
  it("has one module per declared kind, in the contract's order, then the revert-only kinds", () => {
    expect(catalog.map((kind) => kind.kind)).toEqual([...proposalKinds.map((k) => k.kind), ...compensationKinds])
    for (const kind of proposalKinds) expect(kindNamed(kind.kind).declaration).toBe(kind)
    for (const kind of compensationKinds) expect(kindNamed(kind).declaration).toBeUndefined()
  })

  it("makes every kind revertible but remove_keywords, dismiss_recommendation and the compensations", () => {
    const revertible = catalog.filter((kind) => kind.revertible).map((kind) => kind.kind)
    expect(revertible).toEqual(proposalKinds.map((k) => k.kind).filter((k) => k !== "remove_keywords" && k !== "dismiss_recommendation"))
  })

  it("holds the high tier for bid strategy switches and the create/clone composites only", () => {
    const high = catalog.filter((kind) => kind.reviewTier === "high" && kind.declaration !== undefined).map((kind) => kind.kind)
    expect(high.sort()).toEqual(["bid_strategy_change", "clone_ad_group", "clone_campaign", "create_ad_group", "create_campaign"])
  })
})
