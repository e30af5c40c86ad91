/**
 * `acs changeset open|add|submit|show|list|approve|reject`: many proposals as one unit (docs/contract.md 4.3),
 * with one plan, one decision and one approval. `add` takes the `{proposals: [{kind, body}]}` document from a
 * file or stdin and prints each proposal's result; `submit` prints the plan, its impact and the decision.
 */
import type { AddMembersResponse, Changeset, ChangesetDetail } from "@acs/domain/Changesets"
import { AddMembersRequest, ChangesetStatus, OnFailure } from "@acs/domain/Changesets"
import { InvalidRequest } from "@acs/domain/Errors"
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option, Schema } from "effect"
import { readFile } from "node:fs/promises"
import { text } from "node:stream/consumers"
import { MembersRefused, UsageError } from "../CliError.ts"
import { checked, clientOptions, currencyFor, describeIssues, given, limit, projectId, withClient } from "../Client.ts"
import { emit, money, renderRecord, renderTable } from "../Output.ts"

const changesetId = Args.text({ name: "changesetId" }).pipe(Args.withDescription("the changeset, cs_…"))

const actorName = (actor: { readonly kind: string; readonly name: string } | null) =>
  actor === null ? null : `${actor.kind} ${actor.name}`

const renderChangeset = (changeset: Changeset) =>
  renderRecord([
    ["changeset id", changeset.changesetId],
    ["title", changeset.title],
    ["status", changeset.status],
    ["on failure", changeset.onFailure],
    ["reason", changeset.reason],
    ["opened by", actorName(changeset.openedBy)],
    ["created at", changeset.createdAt],
    ["submitted at", changeset.submittedAt],
    ["plan hash", changeset.planHash],
    ["decided by", actorName(changeset.decidedBy)],
    ["decided at", changeset.decidedAt],
    ["decision reason", changeset.decisionReason],
    ["applied at", changeset.appliedAt],
    [
      "members",
      `${changeset.members.total} (${changeset.members.applied} applied, ${changeset.members.failed} failed, ` +
      `${changeset.members.skipped} skipped, ${changeset.members.reverted} reverted, ${changeset.members.pending} pending)`
    ]
  ])

/** The plan, its impact in the account's currency and the policy's decision: what a reviewer approves. */
const renderReview = (changeset: Changeset, currency: string) => {
  const { decision, impact, plan } = changeset
  const delta = impact === null ? null : impact.dailyBudgetDeltaMicros
  const signed = delta === null ? null : `${delta < 0 ? "-" : "+"}${money(Math.abs(delta), currency)}`
  return [
    renderRecord([
      ["plan", plan === null ? null : `${plan.order.length} members in apply order`],
      ["daily budget", signed === null ? null : `${signed} a day`],
      ["mode", decision?.mode],
      ["risk tier", decision?.riskTier]
    ]),
    ...(impact === null ? [] : [
      "by kind:",
      ...Object.entries(impact.byKind).map(([kind, count]) => `  ${kind}: ${count}`)
    ]),
    ...(decision === null ? [] : ["policy reasons:", ...decision.policyReasons.map((r) => `  - ${r}`)])
  ].join("\n")
}

const renderResults = (answer: AddMembersResponse) =>
  [
    renderTable([
      { header: "#", cell: (r) => r.index },
      { header: "STATUS", cell: (r) => r.status },
      { header: "ACTION ID", cell: (r) => r.actionId },
      { header: "KIND", cell: (r) => r.kind },
      {
        header: "SUMMARY OR ERROR",
        cell: (r) => r.error === null ? r.summary : [`${r.error.code}: ${r.error.message}`, ...r.error.validationErrors].join("; ")
      }
    ], answer.results),
    "",
    `${answer.added} added, ${answer.refused} refused to ${answer.changesetId}`
  ].join("\n")

const renderDetail = (detail: ChangesetDetail, currency: string) =>
  [
    renderChangeset(detail.changeset),
    ...(detail.changeset.plan === null ? [] : [renderReview(detail.changeset, currency)]),
    "",
    renderTable([
      { header: "ACTION ID", cell: (a) => a.actionId },
      { header: "KIND", cell: (a) => a.kind },
      { header: "STATUS", cell: (a) => a.status },
      { header: "DEPENDS ON", cell: (a) => a.dependsOn.join(",") },
      { header: "SUMMARY", cell: (a) => a.summary }
    ], detail.memberActions)
  ].join("\n")

const openCommand = Command.make("open", {
  projectId,
  title: Options.text("title").pipe(Options.withDescription("what the changes do together, shown to reviewers")),
  reason: Options.text("reason").pipe(Options.withDescription("why, kept with the changeset"), Options.optional),
  onFailure: Options.choice("on-failure", OnFailure.literals).pipe(
    Options.withDescription("when a member fails to apply: stop (the rest skipped; the default), continue, or rollback"),
    Options.optional
  ),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("openChangeset", {
        path: { projectId: input.projectId },
        payload: { title: input.title, ...given({ reason: input.reason, onFailure: input.onFailure }) }
      })
      const answer = yield* client.openChangeset(request)
      yield* emit(input.json, answer, () =>
        `${renderChangeset(answer)}\nnext: acs changeset add ${answer.projectId} ${answer.changesetId} --file proposals.json`)
    }))
).pipe(Command.withDescription("open a changeset; its members wait in it until it is submitted (scope write)"))

/** The `{proposals: …}` document from a file, or from stdin for `-`. */
const readDocument = (file: string) =>
  Effect.gen(function*() {
    const content = yield* Effect.tryPromise({
      try: () => file === "-" ? text(process.stdin) : readFile(file, "utf8"),
      catch: (error) =>
        new UsageError({
          message: `--file: ${file === "-" ? "stdin" : file} could not be read: ${error instanceof Error ? error.message : String(error)}`
        })
    })
    return yield* Effect.try({
      try: (): unknown => JSON.parse(content),
      catch: (error) =>
        new InvalidRequest({ message: `--file is not JSON: ${error instanceof Error ? error.message : String(error)}` })
    })
  })

/** The document as the procedure's payload, so a bad field is named as `acs propose` names one (`proposals.0.kind`). */
const AddMembersInput = Schema.Struct({ payload: AddMembersRequest })

const addCommand = Command.make("add", {
  projectId,
  changesetId,
  file: Options.text("file").pipe(Options.withDescription(
    "the proposals as JSON, `-` for stdin: {\"proposals\":[{\"kind\":\"budget_change\",\"body\":{…}}]}, each body as " +
      "`acs propose` takes it (with its reason; dependsOn: action ids of members already added); at most 1,000 a call"
  )),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const { payload } = yield* Schema.decodeUnknown(AddMembersInput)({ payload: yield* readDocument(input.file) }, { errors: "all" }).pipe(
        Effect.mapError((error) => new InvalidRequest({ message: describeIssues(error) }))
      )
      const answer = yield* client.addChangesetMembers({
        path: { projectId: input.projectId, changesetId: input.changesetId },
        payload
      })
      yield* emit(input.json, answer, () => renderResults(answer))
      if (answer.refused > 0) {
        return yield* new MembersRefused({
          message: `${answer.refused} of ${answer.results.length} proposals refused (their results above); the others were added`
        })
      }
    }))
).pipe(Command.withDescription(
  "add proposals to an open changeset, each answered on its own: its member, or why it was refused (exit code 2 " +
    "when any was) (scope write)"
))

const submitCommand = Command.make("submit", {
  projectId,
  changesetId,
  preview: Options.boolean("preview").pipe(
    Options.withDescription("the plan, impact and decision without freezing anything (read rate limit)")
  ),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const answer = yield* client.submitChangeset({
        path: { projectId: input.projectId, changesetId: input.changesetId },
        urlParams: input.preview ? { preview: true } : {}
      })
      const currency = yield* currencyFor(client, input)
      yield* emit(input.json, answer, () =>
        [
          ...(input.preview ? ["preview: nothing was frozen; run it again without --preview to submit"] : []),
          renderChangeset(answer),
          renderReview(answer, currency)
        ].join("\n"))
    }))
).pipe(Command.withDescription(
  "freeze the changeset's plan and have the policy decide it as one unit: it auto-applies or queues for a person " +
    "(scope write); --preview shows the plan, impact and decision and freezes nothing"
))

const showCommand = Command.make("show", { projectId, changesetId, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const answer = yield* client.getChangeset({ path: { projectId: input.projectId, changesetId: input.changesetId } })
      const currency = yield* currencyFor(client, input)
      yield* emit(input.json, answer, () => renderDetail(answer, currency))
    }))
).pipe(Command.withDescription("one changeset: its plan, impact, decision and members in apply order (scope read)"))

const listCommand = Command.make("list", {
  projectId,
  status: Options.choice("status", ChangesetStatus.literals).pipe(Options.withDescription("only changesets in this status"), Options.optional),
  limit,
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("listChangesets", {
        path: { projectId: input.projectId },
        urlParams: given({ status: input.status, limit: input.limit })
      })
      const answer = yield* client.listChangesets(request)
      yield* emit(input.json, answer, () =>
        [
          renderTable([
            { header: "CREATED AT", cell: (c) => c.createdAt },
            { header: "CHANGESET ID", cell: (c) => c.changesetId },
            { header: "STATUS", cell: (c) => c.status },
            { header: "MEMBERS", cell: (c) => c.members.total },
            { header: "OPENED BY", cell: (c) => actorName(c.openedBy) },
            { header: "TITLE", cell: (c) => c.title }
          ], answer.changesets),
          "",
          `${answer.changesets.length} of ${answer.total}`
        ].join("\n"))
    }))
).pipe(Command.withDescription("the account's changesets, newest first (scope read)"))

const approveCommand = Command.make("approve", {
  projectId,
  changesetId,
  planHash: Options.text("plan-hash").pipe(
    Options.withDescription(
      "the planHash you reviewed (acs changeset show); without it, the current one is fetched and approved: " +
        "approving a plan without reviewing it is your choice"
    ),
    Options.optional
  ),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const path = { projectId: input.projectId, changesetId: input.changesetId }
      const planHash = yield* Option.match(input.planHash, {
        onSome: Effect.succeed,
        onNone: () =>
          client.getChangeset({ path }).pipe(Effect.flatMap(({ changeset }) =>
            changeset.planHash === null
              ? new UsageError({ message: `conflict: ${changeset.changesetId} is ${changeset.status}, with no plan to approve: submit it first` })
              : Effect.succeed(changeset.planHash)
          ))
      })
      const answer = yield* client.approveChangeset({ path, payload: { planHash } })
      yield* emit(input.json, answer, () => renderChangeset(answer))
    }))
).pipe(Command.withDescription(
  "approve a submitted changeset by its plan hash; its members apply in order (write + canApprove)"
))

const rejectCommand = Command.make("reject", {
  projectId,
  changesetId,
  reason: Options.text("reason").pipe(Options.withDescription("why, kept with the changeset and its members"), Options.optional),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("rejectChangeset", {
        path: { projectId: input.projectId, changesetId: input.changesetId },
        payload: given({ reason: input.reason })
      })
      const answer = yield* client.rejectChangeset(request)
      yield* emit(input.json, answer, () => renderChangeset(answer))
    }))
).pipe(Command.withDescription(
  "reject a changeset (write + canApprove), or withdraw one you opened (write); none of its members applies"
))

export const changesetCommand = Command.make("changeset").pipe(
  Command.withDescription(
    "many proposals as one unit: open, add members, submit (one plan, one decision), then a person approves or rejects"
  ),
  Command.withSubcommands([openCommand, addCommand, submitCommand, showCommand, listCommand, approveCommand, rejectCommand])
)
