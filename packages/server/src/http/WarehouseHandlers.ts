/** The spend-ranked account reads and the sync endpoints over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const WarehouseHandlers = HttpApiBuilder.group(Api, "warehouse", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      .handle("listCampaigns", operate.handler("listCampaigns"))
      .handle("listAdGroups", operate.handler("listAdGroups"))
      .handle("listKeywords", operate.handler("listKeywords"))
      .handle("listSearchTerms", operate.handler("listSearchTerms"))
      .handle("listAds", operate.handler("listAds"))
      .handle("listNegativeKeywords", operate.handler("listNegativeKeywords"))
      .handle("listSyncs", operate.handler("listSyncs"))
      .handle("getSync", operate.handler("getSync"))
      .handle("startSync", (input) =>
        Effect.gen(function*() {
          const { grant, success } = yield* operate.withGrant("startSync", input)
          yield* HttpApp.appendPreResponseHandler((_request, response) =>
            Effect.succeed(HttpServerResponse.setHeader(
              response,
              "location",
              `/api/v1/accounts/${grant.account.projectId}/syncs/${success.syncId}`
            ))
          )
          return success
        }))
  }))
