/**
 * docs/contract.md 1: the prior state is stored in payload fields whose names start with `prior`. Checked over every kind
 * in the catalog by walking its payload schema: every field (at any depth) is under a `prior…` field, names
 * or places the entity (`…Id`, `…Ids`, `…Name`, `id`, `text`, `currency`), or is listed below as the change's
 * new state or a fact it reads without replacing. So a snapshot of replaced state under another name (as
 * `keywords` and `negatives` of the removals once were) fails here until it is renamed or argued for below.
 */
import { SchemaAST, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { catalog } from "../../src/actions/kinds/Catalog.ts"

/** Every leaf of a schema as a path: `priorKeywords[].status`, `campaign.adGroups[].name`. */
const leaves = (ast: SchemaAST.AST, path: string): Array<string> => {
  switch (ast._tag) {
    case "TypeLiteral":
      return ast.propertySignatures.flatMap((field) =>
        leaves(field.type, path === "" ? String(field.name) : `${path}.${String(field.name)}`)
      )
    case "TupleType":
      return [...ast.elements.map((e) => e.type), ...ast.rest.map((r) => r.type)].flatMap((element) => leaves(element, `${path}[]`))
    case "Union": {
      const paths = ast.types.flatMap((member) => leaves(member, path))
      return [...new Set(paths)]
    }
    case "Refinement":
      return leaves(ast.from, path)
    case "Transformation":
      return leaves(ast.to, path)
    case "Suspend":
      return leaves(ast.f(), path)
    default:
      return [path]
  }
}

const fieldsOf = (path: string) => path.split(".").map((segment) => segment.replace(/\[\]$/, ""))

const isPrior = (path: string) => fieldsOf(path).some((field) => field.startsWith("prior"))

const IDENTITY = /^(id|text|currency)$|(Id|Ids|Name)$/
const isIdentity = (path: string) => IDENTITY.test(fieldsOf(path).at(-1) ?? "")

/**
 * Per kind, what is neither prior state nor identity: a path, or a prefix covering everything under it.
 * Nothing here is state the change replaces or removes.
 */
const notPrior: Readonly<Record<string, ReadonlyArray<string>>> = {
  budget_change: ["newDailyBudgetMicros"],
  campaign_status: ["status"],
  bid_strategy_change: ["bidStrategy", "targetCpaMicros"],
  target_cpa_change: ["newTargetCpaMicros"],
  // Creates and copies replace nothing: the whole tree is new state.
  create_campaign: ["campaign"],
  clone_campaign: ["campaign"],
  rename: ["entity", "name"],
  ad_group_status: ["status"],
  cpa_goal_change: ["newCpaGoalMicros"],
  default_bid_change: ["newDefaultBidMicros"],
  search_match_change: ["enabled"],
  create_ad_group: ["name", "defaultBidMicros", "cpaGoalMicros", "searchMatch", "keywords", "negativeKeywords"],
  // `keywordBidsDropped` counts what the copy leaves out; the source is not changed.
  clone_ad_group: ["copy", "keywordBidsDropped"],
  // `defaultBidMicros` is the ad group's default bid the policy rule reads; adding keywords does not change it.
  add_keywords: ["keywords", "defaultBidMicros"],
  keyword_bid_change: ["keywords[].newBidMicros"],
  // Each keyword's match type only labels it; the status is the one change requested.
  keyword_status: ["status", "keywords[].matchType", "keywords[].newStatus"],
  change_match_type: ["newMatchType"],
  remove_keywords: [],
  add_negative_keywords: ["negatives"],
  remove_negative_keywords: [],
  // The terms are new keywords and negatives; the source ad groups' delivery they remove is under `priorDelivery`.
  harvest_search_terms: ["terms", "negateAtSource"],
  ad_status: ["status"],
  // Revert-only deletions of what an action created: ids only, and no inverse needing a snapshot.
  delete_campaign: [],
  delete_ad_group: [],
  unharvest_search_terms: []
}

const covered = (path: string, entries: ReadonlyArray<string>) =>
  entries.some((entry) => path === entry || path.startsWith(`${entry}.`) || path.startsWith(`${entry}[]`))

/** Kinds that change or remove entities that already exist: they must record what they replace. */
const replacesState = (kind: string) => !/^(create_|clone_|add_|delete_)/.test(kind)

const payloadLeaves = (kind: (typeof catalog)[number]) =>
  kind.use((definition) => leaves(Schema.typeSchema(definition.payload).ast, ""))

describe("prior state lives only in prior… fields (docs/contract.md 2.1)", () => {
  it("classifies every kind of the catalog", () => {
    expect(Object.keys(notPrior).sort()).toEqual(catalog.map((kind) => kind.kind).sort())
  })

  it.each(catalog.map((kind) => [kind.kind, kind] as const))("%s", (name, kind) => {
    const paths = payloadLeaves(kind)
    const entries = notPrior[name] ?? []
    const unexplained = paths.filter((path) => !isPrior(path) && !isIdentity(path) && !covered(path, entries))
    expect(unexplained, "payload fields holding state under a name not starting with prior").toEqual([])
    // Every listed entry still names a field, so the list cannot silently outlive a rename.
    for (const entry of entries) expect(paths.some((path) => covered(path, [entry])), entry).toBe(true)
    if (replacesState(name)) expect(paths.filter(isPrior), "a kind that replaces state records it").not.toEqual([])
  })

  it("records the removed keywords and negatives whole, under priorKeywords and priorNegatives", () => {
    const byName = new Map(catalog.map((kind) => [kind.kind, kind]))
    const removeKeywords = payloadLeaves(byName.get("remove_keywords")!)
    const removeNegatives = payloadLeaves(byName.get("remove_negative_keywords")!)
    expect(removeKeywords.every((path) => path.startsWith("priorKeywords[]."))).toBe(true)
    expect(removeKeywords).toEqual(expect.arrayContaining(["priorKeywords[].status", "priorKeywords[].bidMicros"]))
    expect(removeNegatives.every((path) => path.startsWith("priorNegatives[]."))).toBe(true)
    expect(removeNegatives).toEqual(expect.arrayContaining(["priorNegatives[].status", "priorNegatives[].matchType"]))
  })
})
