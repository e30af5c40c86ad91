/**
 * Path ids to entities, or a 404 as the platform answers. "Live" lookups also refuse deleted
 * entities (nothing can be listed under or written to them); plain lookups return them, so a GET by
 * id shows `deleted: true`.
 */
import { notFound } from "./SimulatorHttp.ts"
import type { SimAdGroup, SimCampaign } from "./SimulatorModel.ts"
import { idAt, type OrgRequest } from "./SimulatorRouter.ts"

export const campaignAt = (request: OrgRequest, live: boolean): SimCampaign => {
  const campaign = request.state.campaign(request.account, idAt(request, 0))
  if (campaign === undefined || (live && campaign.deleted)) throw notFound("Campaign")
  return campaign
}

export const adGroupAt = (request: OrgRequest, live: boolean): { readonly campaign: SimCampaign; readonly adGroup: SimAdGroup } => {
  const campaign = campaignAt(request, true)
  const adGroup = request.state.adGroup(campaign, idAt(request, 1))
  if (adGroup === undefined || (live && adGroup.deleted)) throw notFound("AdGroup")
  return { campaign, adGroup }
}

/** PUT bodies may come wrapped (`{campaign: {...}}`, as the platform documents) or bare. */
export const unwrap = (body: unknown, key: string): unknown => {
  if (typeof body === "object" && body !== null && key in body) {
    const inner: unknown = (body as Readonly<Record<string, unknown>>)[key]
    if (typeof inner === "object" && inner !== null) return inner
  }
  return body
}
