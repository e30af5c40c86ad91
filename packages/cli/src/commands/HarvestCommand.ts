/**
 * `acs harvest`: search terms become EXACT keywords in their target ad groups, negated where they came from
 * (docs/contract.md 2.1, harvest_search_terms). `--preview` prints the share of each source ad group's 30-day spend,
 * taps and installs the negatives remove, recording nothing; without it the harvest is proposed (it always queues
 * for a person's review).
 */
import { type ProposalPreview, isProposalResponse } from "@acs/domain/Actions"
import { InvalidRequest } from "@acs/domain/Errors"
import { Command, Options } from "@effect/cli"
import { Effect, Option, Schema } from "effect"
import { checked, clientOptions, projectId, withClient } from "../Client.ts"
import { emit, renderRecord, renderTable } from "../Output.ts"

const term = Options.text("term").pipe(
  Options.withDescription("SOURCE_AD_GROUP_ID:TARGET_AD_GROUP_ID:TEXT, once per term (the text may hold colons)"),
  Options.repeated
)

const bidMicros = Options.integer("bid-micros").pipe(
  Options.withDescription("every new keyword's bid in micros (default: the target ad group's default bid)"),
  Options.optional
)

const keepAtSource = Options.boolean("keep-at-source").pipe(
  Options.withDescription("add the keywords without negating the terms where they came from")
)

const reason = Options.text("reason").pipe(Options.withDescription("why, kept in the ledger and shown to reviewers"))

const preview = Options.boolean("preview").pipe(
  Options.withDescription("a dry run: the delivery the negatives remove and the policy's decision, nothing recorded")
)

/** `source:target:text` as a term of the request. */
const parseTerm = (bid: Option.Option<number>) => (spec: string) => {
  const [source, target, ...text] = spec.split(":")
  return source === undefined || target === undefined || text.length === 0 || source === "" || target === "" || text.join(":") === ""
    ? Effect.fail(new InvalidRequest({ message: `--term: "${spec}" is not SOURCE_AD_GROUP_ID:TARGET_AD_GROUP_ID:TEXT` }))
    : Effect.succeed({ text: text.join(":"), sourceAdGroupId: source, targetAdGroupId: target, ...Option.match(bid, { onNone: () => ({}), onSome: (micros) => ({ bidMicros: micros }) }) })
}

const percent = (value: number) => `${value}%`

/** What the preview's payload says of the source ad groups' delivery. */
const PriorDelivery = Schema.Struct({
  priorDelivery: Schema.Struct({
    adGroups: Schema.Array(Schema.Struct({
      adGroupId: Schema.String,
      adGroupName: Schema.String,
      removedPct: Schema.Struct({ spend: Schema.Number, taps: Schema.Number, installs: Schema.Number })
    }))
  })
})

/** The delivery the negatives remove, per source ad group, from the preview's payload. */
const deliveryTable = (answer: ProposalPreview): string => {
  const groups = Option.match(Schema.decodeUnknownOption(PriorDelivery)(answer.payload), {
    onNone: () => [],
    onSome: (payload) => payload.priorDelivery.adGroups
  })
  return renderTable([
    { header: "SOURCE AD GROUP", cell: (g) => g.adGroupId },
    { header: "NAME", cell: (g) => g.adGroupName },
    { header: "SPEND", cell: (g) => percent(g.removedPct.spend) },
    { header: "TAPS", cell: (g) => percent(g.removedPct.taps) },
    { header: "INSTALLS", cell: (g) => percent(g.removedPct.installs) }
  ], groups)
}

export const harvestCommand = Command.make("harvest", { projectId, term, bidMicros, keepAtSource, reason, preview, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      if (input.term.length === 0) return yield* new InvalidRequest({ message: "--term: give at least one SOURCE_AD_GROUP_ID:TARGET_AD_GROUP_ID:TEXT" })
      const terms = yield* Effect.forEach(input.term, parseTerm(input.bidMicros))
      const request = yield* checked("proposeHarvestSearchTerms", {
        path: { projectId: input.projectId },
        payload: { terms, negateAtSource: !input.keepAtSource, reason: input.reason },
        urlParams: input.preview ? { preview: true } : {},
        headers: {}
      })
      const answer = yield* client.proposeHarvestSearchTerms(request)
      yield* emit(input.json, answer, () =>
        isProposalResponse(answer)
          ? renderRecord([
            ["action id", answer.actionId],
            ["mode", answer.mode],
            ["status", answer.status],
            ["summary", answer.summary]
          ])
          : [
            "preview: nothing was recorded; run it again without --preview to propose it",
            renderRecord([["mode", answer.mode], ["summary", answer.summary]]),
            "over the last 30 days the negatives remove:",
            deliveryTable(answer),
            "policy reasons:",
            ...answer.policyReasons.map((r) => `  - ${r}`)
          ].join("\n"))
    }))
).pipe(Command.withDescription(
  "harvest search terms (scope write): EXACT keywords in their target ad groups, negated where they came from; " +
    "--preview shows the share of delivery the negatives remove and records nothing"
))
