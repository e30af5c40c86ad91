/**
 * `acs recommendations`: Apple's recommendations as last synced, with the campaign's last week, Apple's expected week
 * and the expiry. Act on one with `acs propose apply_recommendation` or `acs propose dismiss_recommendation`.
 */
import { Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { checked, clientOptions, currencyFor, given, projectId, withClient } from "../Client.ts"
import { collectionFooter, emit, money, renderTable } from "../Output.ts"

const campaign = Options.text("campaign").pipe(Options.withDescription("only this campaign's recommendations"), Options.optional)

export const recommendationsCommand = Command.make("recommendations", { projectId, campaign, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("listRecommendations", {
        path: { projectId: input.projectId },
        urlParams: given({ campaignId: input.campaign })
      })
      const [answer, currency] = yield* Effect.all([client.listRecommendations(request), currencyFor(client, input)], { concurrency: 2 })
      yield* emit(input.json, answer, () =>
        [
          renderTable([
            { header: "RECOMMENDATION ID", cell: (r) => r.recommendationId },
            { header: "TYPE", cell: (r) => r.type },
            { header: "CAMPAIGN", cell: (r) => `${r.campaignId} ${r.campaignName}` },
            { header: "STATE", cell: (r) => r.state },
            { header: "NOW", cell: (r) => money(r.currentMicros, currency) },
            { header: "RECOMMENDED", cell: (r) => money(r.recommendedMicros, currency) },
            { header: "7D INSTALLS", cell: (r) => r.lastWeek.installs },
            { header: "EXPECTED INSTALLS", cell: (r) => r.expected.installs },
            { header: "EXPECTED SPEND", cell: (r) => money(r.expected.spendMicros, currency) },
            { header: "EXPECTED CPA", cell: (r) => money(r.expected.cpaMicros, currency) },
            { header: "EXPIRES", cell: (r) => r.expiresAt }
          ], answer.recommendations),
          "",
          collectionFooter(answer.recommendations.length, answer),
          "apply one: acs propose apply_recommendation <projectId> --body '{\"recommendationId\":\"…\",\"reason\":\"…\"}'"
        ].join("\n"))
    }))
).pipe(Command.withDescription("Apple's recommendations (daily cap, target CPA) with their expected effect and expiry (scope read)"))
