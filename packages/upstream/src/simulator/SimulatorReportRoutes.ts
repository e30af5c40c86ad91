/** The five report endpoints: POST with a WireReportRequest body. */
import { WireReportRequest } from "../Wire.ts"
import { decodeInput, JsonText, type Answer } from "./SimulatorHttp.ts"
import { campaignAt } from "./SimulatorLookup.ts"
import { prepareReport, type ReportPathLevel } from "./SimulatorReports.ts"
import { v5ReportBytes } from "./SimulatorReportJson.ts"
import { type OrgRequest, readRoute, type Route } from "./SimulatorRouter.ts"
import type { SimCampaign } from "./SimulatorModel.ts"

const answer = (request: OrgRequest, level: ReportPathLevel, campaign: SimCampaign | null): Answer => {
  const body = decodeInput(WireReportRequest, request.body)
  const report = prepareReport(request.state, request.account, level, campaign, body)
  return { status: 200, body: new JsonText(v5ReportBytes(report, body.returnRowTotals === true, body.returnGrandTotals === true)) }
}

// Reports include deleted campaigns' history, so a deleted campaign is still reportable.
const report = (level: Exclude<ReportPathLevel, "campaigns">) => (request: OrgRequest) => answer(request, level, campaignAt(request, false))

export const reportRoutes: ReadonlyArray<Route> = [
  readRoute("POST", "/reports/campaigns", (request) => answer(request, "campaigns", null)),
  readRoute("POST", "/reports/campaigns/:id/adgroups", report("adgroups")),
  readRoute("POST", "/reports/campaigns/:id/keywords", report("keywords")),
  readRoute("POST", "/reports/campaigns/:id/searchterms", report("searchterms")),
  readRoute("POST", "/reports/campaigns/:id/ads", report("ads"))
]
