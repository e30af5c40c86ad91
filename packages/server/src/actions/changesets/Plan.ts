/**
 * A changeset's plan, pure (docs/contract.md 4.3): the apply order (parents before children — campaign, ad
 * group, keywords and ads, negatives — and every declared `dependsOn` before its dependant), the plan's hash,
 * and the aggregate impact. Property-tested in test/unit/changesetPlan.test.ts.
 */
import type { ChangesetImpact, ChangesetPlan } from "@acs/domain/Changesets"
import type { KindName } from "@acs/domain/ProposalKinds"
import * as Crypto from "node:crypto"

export interface PlanMember {
  readonly actionId: string
  readonly kind: KindName
  readonly dependsOn: ReadonlyArray<string>
  readonly payload: Readonly<Record<string, unknown>>
}

/** The level of the entity a kind changes: a parent's change goes first. */
const LEVEL: Readonly<Record<KindName, number>> = {
  create_campaign: 0,
  clone_campaign: 0,
  delete_campaign: 0,
  budget_change: 0,
  campaign_status: 0,
  bid_strategy_change: 0,
  target_cpa_change: 0,
  rename: 0,
  create_ad_group: 1,
  clone_ad_group: 1,
  delete_ad_group: 1,
  ad_group_status: 1,
  cpa_goal_change: 1,
  default_bid_change: 1,
  search_match_change: 1,
  add_keywords: 2,
  keyword_bid_change: 2,
  keyword_status: 2,
  change_match_type: 2,
  remove_keywords: 2,
  ad_status: 2,
  add_negative_keywords: 3,
  remove_negative_keywords: 3,
  // Keywords then negatives, in its own steps: the level of its first.
  harvest_search_terms: 2,
  unharvest_search_terms: 2
}

/** A rename of an ad group is the ad group's level. */
const levelOf = (member: PlanMember): number =>
  member.kind === "rename" && member.payload["entity"] === "adGroup" ? 1 : LEVEL[member.kind]

/**
 * The apply order of `members` (given in the order they were added): by level, then as added, except that a
 * member never comes before what it depends on. A dependency names an earlier member (it must exist when the
 * dependant is added), so there is no cycle; one on no member of the list is ignored.
 */
export const planOf = (members: ReadonlyArray<PlanMember>): ChangesetPlan => {
  const position = new Map(members.map((member, index) => [member.actionId, index]))
  const rank = (member: PlanMember, index: number) => levelOf(member) * members.length + index
  const ready = members
    .map((member, index) => ({ member, index, key: rank(member, index) }))
    .sort((a, b) => a.key - b.key)
  const placed = new Set<string>()
  const order: Array<string> = []
  // Place each member after its own dependencies, depth first; the input has no cycle.
  const place = (member: PlanMember) => {
    if (placed.has(member.actionId)) return
    placed.add(member.actionId)
    for (const dependency of member.dependsOn) {
      const at = position.get(dependency)
      if (at !== undefined) place(members[at]!)
    }
    order.push(member.actionId)
  }
  for (const { member } of ready) place(member)
  return {
    order,
    dependencies: members
      .filter((member) => member.dependsOn.length > 0)
      .map((member) => ({ actionId: member.actionId, dependsOn: member.dependsOn.filter((id) => position.has(id)) }))
  }
}

/** Keys sorted at every level: the same content always hashes the same. */
const canonical = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical((value as Record<string, unknown>)[key])]))
}

/** The plan's hash: the order, the dependencies and each member's payload (prior state included), as SHA-256. */
export const planHashOf = (changesetId: string, plan: ChangesetPlan, members: ReadonlyArray<PlanMember>): string => {
  const byId = new Map(members.map((member) => [member.actionId, member]))
  const content = {
    changesetId,
    plan,
    members: plan.order.map((id) => ({ actionId: id, kind: byId.get(id)?.kind, payload: byId.get(id)?.payload }))
  }
  return `sha256:${Crypto.createHash("sha256").update(JSON.stringify(canonical(content))).digest("hex")}`
}

const int = (value: unknown): number => (typeof value === "number" && Number.isInteger(value) ? value : 0)

/** A budget change's net change of the daily budget, in micros; zero for every other kind. */
const budgetDelta = (member: PlanMember): number =>
  member.kind === "budget_change" ? int(member.payload["newDailyBudgetMicros"]) - int(member.payload["priorDailyBudgetMicros"]) : 0

const campaignOf = (member: PlanMember): string | null => {
  const id = member.payload["campaignId"]
  if (typeof id === "string") return id
  const source = member.payload["sourceCampaignId"]
  return typeof source === "string" ? source : null
}

/** What the whole changes: the net daily-budget change, members by kind and by campaign. */
export const impactOf = (members: ReadonlyArray<PlanMember>): ChangesetImpact => {
  const byKind: Record<string, number> = {}
  const byCampaign = new Map<string | null, { members: number; dailyBudgetDeltaMicros: number }>()
  let dailyBudgetDeltaMicros = 0
  for (const member of members) {
    byKind[member.kind] = (byKind[member.kind] ?? 0) + 1
    const delta = budgetDelta(member)
    dailyBudgetDeltaMicros += delta
    const campaign = campaignOf(member)
    const entry = byCampaign.get(campaign) ?? { members: 0, dailyBudgetDeltaMicros: 0 }
    byCampaign.set(campaign, { members: entry.members + 1, dailyBudgetDeltaMicros: entry.dailyBudgetDeltaMicros + delta })
  }
  return {
    dailyBudgetDeltaMicros,
    byKind,
    byCampaign: [...byCampaign.entries()]
      .map(([campaignId, entry]) => ({ campaignId, ...entry }))
      .sort((a, b) => b.members - a.members || String(a.campaignId).localeCompare(String(b.campaignId)))
  }
}
