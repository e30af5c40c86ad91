/** The five report endpoints: POST with a WireReportRequest body. */
import { WireReportRequest } from "../Wire.ts"
import { decodeInput, ok } from "./SimulatorHttp.ts"
import { campaignAt } from "./SimulatorLookup.ts"
import { type ReportPathLevel, runReport } from "./SimulatorReports.ts"
import { type OrgRequest, readRoute, type Route } from "./SimulatorRouter.ts"

const report = (level: Exclude<ReportPathLevel, "campaigns">) => (request: OrgRequest) => {
  // Reports include deleted campaigns' history, so a deleted campaign is still reportable.
  const campaign = campaignAt(request, false)
  const body = decodeInput(WireReportRequest, request.body)
  const answer = runReport(request.state, request.account, level, campaign, body)
  return ok(answer.data, answer.pagination)
}

export const reportRoutes: ReadonlyArray<Route> = [
  readRoute("POST", "/reports/campaigns", (request) => {
    const body = decodeInput(WireReportRequest, request.body)
    const answer = runReport(request.state, request.account, "campaigns", null, body)
    return ok(answer.data, answer.pagination)
  }),
  readRoute("POST", "/reports/campaigns/:id/adgroups", report("adgroups")),
  readRoute("POST", "/reports/campaigns/:id/keywords", report("keywords")),
  readRoute("POST", "/reports/campaigns/:id/searchterms", report("searchterms")),
  readRoute("POST", "/reports/campaigns/:id/ads", report("ads"))
]
