/**
 * What the pages show of a changeset (docs/contract.md 4.3): its members by campaign and ad group, the signed
 * daily-budget change, and who may decide it: the four-eyes rule over its opener and every member's proposer,
 * as the server decides an approval (docs/decisions/changesets.md).
 */
import type { ActionRecord, Actor } from "@acs/domain/Actions"
import type { Changeset } from "@acs/domain/Changesets"
import { type CallerMay, callerMay, type FourEyesRule, maySecondApprove } from "@acs/domain/FourEyes"
import type { Principal } from "@acs/domain/Principal"
import { money } from "./format.ts"

/** A daily-budget change with its sign: `+$12.00`, `−$5.00`, `no change`. */
export const signedMoney = (micros: number, currency: string): string =>
  micros === 0 ? "no change" : `${micros > 0 ? "+" : "−"}${money(Math.abs(micros), currency)}`

export interface AdGroupMembers {
  readonly adGroupId: string | null
  readonly members: ReadonlyArray<ActionRecord>
}

export interface CampaignMembers {
  readonly campaignId: string | null
  readonly adGroups: ReadonlyArray<AdGroupMembers>
}

const idOf = (value: unknown): string | null =>
  typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : null

/** Members by the campaign, then the ad group, their payload names; in the order they came (the plan's). */
export const byCampaignAndAdGroup = (members: ReadonlyArray<ActionRecord>): ReadonlyArray<CampaignMembers> => {
  const campaigns = new Map<string | null, Map<string | null, Array<ActionRecord>>>()
  for (const member of members) {
    const campaignId = idOf(member.payload["campaignId"])
    const adGroupId = idOf(member.payload["adGroupId"])
    const adGroups = campaigns.get(campaignId) ?? new Map<string | null, Array<ActionRecord>>()
    campaigns.set(campaignId, adGroups)
    const list = adGroups.get(adGroupId) ?? []
    adGroups.set(adGroupId, list)
    list.push(member)
  }
  return [...campaigns].map(([campaignId, adGroups]) => ({
    campaignId,
    adGroups: [...adGroups].map(([adGroupId, list]) => ({ adGroupId, members: list }))
  }))
}

const distinct = (actors: ReadonlyArray<Actor>): ReadonlyArray<Actor> => {
  const seen = new Map<string, Actor>()
  for (const actor of actors) seen.set(`${actor.kind}:${actor.id}`, actor)
  return [...seen.values()]
}

/**
 * What the person may do with a queued changeset: approve when they may approve its opener's and every pending
 * member's proposals (the first refusal says why not) and, for a high-risk one approved once, are not the person
 * who approved it; reject with the grant, or as its opener (a withdrawal).
 */
export const mayDecideChangeset = (
  rule: FourEyesRule,
  me: Principal,
  changeset: Changeset,
  members: ReadonlyArray<ActionRecord>
): CallerMay => {
  const parties = distinct([changeset.openedBy, ...members.filter((m) => m.status === "proposed").map((m) => m.proposedBy)])
  const verdicts = parties.map((party) => callerMay(rule, me, party))
  const first = changeset.approvals[0]
  const second = first === undefined ? undefined : maySecondApprove(first.by, me)
  const refused = verdicts.find((v) => !v.approve) ?? (second !== undefined && !second.allowed ? { reason: second.reason } : undefined)
  const opener = changeset.openedBy.kind === me.kind && changeset.openedBy.id === me.id
  const yours = verdicts.some((v) => v.yours)
  return {
    approve: refused === undefined && verdicts.length > 0,
    reject: me.canApprove || opener,
    yours,
    reason: refused?.reason ?? verdicts.find((v) => v.yours)?.reason ?? verdicts[0]?.reason ?? ""
  }
}
