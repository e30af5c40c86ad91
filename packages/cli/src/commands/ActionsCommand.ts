/**
 * The change pipeline from the command line: `acs propose`, `acs approvals`, `acs approve`, `acs reject`,
 * `acs revert` and `acs ledger`.
 */
import { type ActionRecord, ActionStatus, isProposalResponse, type ProposalPreview, type ProposalResponse } from "@acs/domain/Actions"
import { InvalidRequest } from "@acs/domain/Errors"
import { type KindName as ActionKindName, proposalKinds } from "@acs/domain/ProposalKinds"
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { actionId, checked, type Client, clientOptions, given, limit, projectId, withClient } from "../Client.ts"
import { emit, renderRecord, renderTable } from "../Output.ts"

const kindNames = proposalKinds.map((k) => k.kind).join(", ")

/** A kind as the contract names it (docs/contract.md 2.1) (`budget_change`) or by its path (`budget-change`). */
const kindOf = (name: string) =>
  Option.fromNullable(proposalKinds.find((k) => k.kind === name.replaceAll("-", "_") || k.path === name)).pipe(
    Effect.mapError(() => new InvalidRequest({ message: `kind: no proposal kind "${name}"; one of ${kindNames}` }))
  )

const parseBody = (text: string) =>
  Effect.try({
    try: (): unknown => JSON.parse(text),
    catch: (error) =>
      new InvalidRequest({ message: `--body is not JSON: ${error instanceof Error ? error.message : String(error)}` })
  })

/** One proposal procedure, whichever kind: the input was checked against that kind's own schema first. */
type Propose = (input: {
  readonly path: { readonly projectId: string }
  readonly payload: unknown
  readonly urlParams: { readonly preview?: boolean }
  readonly headers: { readonly "idempotency-key"?: string }
}) => ReturnType<Client["proposeBudgetChange"]>

const proposalFields = (answer: ProposalResponse) =>
  [
    ["action id", answer.actionId],
    ["kind", answer.kind],
    ["mode", answer.mode],
    ["status", answer.status],
    ["risk tier", answer.riskTier],
    ["summary", answer.summary],
    ...(answer.replayed === true ? [["replayed", "yes: the answer to the first request with this idempotency key"] as const] : [])
  ] as const

const renderProposal = (answer: ProposalResponse) =>
  [renderRecord(proposalFields(answer)), "policy reasons:", ...answer.policyReasons.map((r) => `  - ${r}`)].join("\n")

/** A dry run: what the proposal would record, and that nothing was. */
const renderPreview = (answer: ProposalPreview) =>
  [
    "preview: nothing was recorded; run it again without --preview to record it",
    renderRecord([
      ["kind", answer.kind],
      ["mode", answer.mode],
      ["risk tier", answer.riskTier],
      ["summary", answer.summary]
    ]),
    "policy reasons:",
    ...answer.policyReasons.map((r) => `  - ${r}`),
    "payload:",
    JSON.stringify(answer.payload, null, 2)
  ].join("\n")

const renderAction = (record: ActionRecord) =>
  [
    renderRecord([
      ["action id", record.actionId],
      ["kind", record.kind],
      ["status", record.status],
      ["mode", record.mode],
      ["risk tier", record.riskTier],
      ["summary", record.summary],
      ["proposed by", `${record.proposedBy.kind} ${record.proposedBy.name}`],
      ["decided by", record.decidedBy === null ? null : `${record.decidedBy.kind} ${record.decidedBy.name}`],
      ["decision reason", record.decisionReason],
      ["decided at", record.decidedAt]
    ]),
    "policy reasons:",
    ...record.policyReasons.map((r) => `  - ${r}`)
  ].join("\n")

export const proposeCommand = Command.make("propose", {
  kind: Args.text({ name: "kind" }).pipe(Args.withDescription(`the proposal kind, e.g. budget_change or budget-change: ${kindNames}`)),
  projectId,
  body: Options.text("body").pipe(
    Options.withDescription("the request body as JSON, with `reason`, e.g. '{\"campaignId\":\"…\",\"newDailyBudgetMicros\":45000000,\"reason\":\"…\"}'")
  ),
  idempotencyKey: Options.text("idempotency-key").pipe(
    Options.withDescription("a retry with the same key and body replays the first answer instead of making a second action"),
    Options.optional
  ),
  preview: Options.boolean("preview").pipe(
    Options.withDescription("a dry run: validate and run the policy, print what would be recorded, record nothing (read rate limit)")
  ),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const kind = yield* kindOf(input.kind)
      const request = yield* checked(kind.operation, {
        path: { projectId: input.projectId },
        payload: yield* parseBody(input.body),
        urlParams: input.preview ? { preview: true } : {},
        headers: given({ "idempotency-key": input.idempotencyKey })
      })
      // Every proposal procedure takes this input shape; the compiler cannot pick one by a run-time kind.
      const answer = yield* (client[kind.operation] as Propose)(request)
      yield* emit(input.json, answer, () => isProposalResponse(answer) ? renderProposal(answer) : renderPreview(answer))
    }))
).pipe(Command.withDescription(
  "propose a change (scope write); it auto-applies or queues for review — with an API key it always queues; " +
    "--preview shows what would happen and records nothing"
))

/** The accounts the key reaches: its one account for a key bound to one, else the org's accounts it may read. */
const reachedAccounts = (client: Client) =>
  Effect.gen(function*() {
    const { principal } = yield* client.getMe({})
    if (principal.binding.kind === "account") {
      const { account } = yield* client.getAccount({ path: { projectId: principal.binding.projectId } })
      return [{ projectId: account.projectId, name: account.name }]
    }
    const { accounts } = yield* client.listAccounts({})
    return accounts.map((a) => ({ projectId: a.projectId, name: a.name }))
  })

type ApprovalPage = Effect.Effect.Success<ReturnType<Client["listApprovals"]>>
type Pending = ApprovalPage["approvals"][number]

const renderApprovals = (approvals: ReadonlyArray<Pending>, accountName?: (projectId: string) => string) =>
  [
    renderTable([
      ...(accountName === undefined ? [] : [{ header: "ACCOUNT", cell: (a: Pending) => accountName(a.projectId) }]),
      { header: "ACTION ID", cell: (a: Pending) => a.actionId },
      { header: "KIND", cell: (a: Pending) => a.kind },
      { header: "RISK", cell: (a: Pending) => a.riskTier },
      { header: "PROPOSED BY", cell: (a: Pending) => `${a.proposedBy.kind} ${a.proposedBy.name}` },
      { header: "CREATED AT", cell: (a: Pending) => a.created_at },
      { header: "YOU MAY", cell: (a: Pending) => a.callerMay.approve ? "approve" : a.callerMay.reject ? "reject" : "read" },
      { header: "SUMMARY", cell: (a: Pending) => a.summary }
    ], approvals),
    // Who may decide, in words, for each change this caller may not simply approve.
    ...approvals.filter((a) => !a.callerMay.approve || a.callerMay.yours).map((a) => `${a.actionId}: ${a.callerMay.reason}`)
  ]

/**
 * Without an account, every account's queue the key reaches, as the console's approvals page shows them: one list,
 * oldest first, each row naming its account; `--limit` holds per account.
 */
export const approvalsCommand = Command.make("approvals", {
  projectId: projectId.pipe(Args.optional),
  limit,
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const page = (projectId: string) =>
        checked("listApprovals", { path: { projectId }, urlParams: given({ limit: input.limit }) }).pipe(Effect.flatMap((request) => client.listApprovals(request)))
      if (Option.isSome(input.projectId)) {
        const answer = yield* page(input.projectId.value)
        return yield* emit(input.json, answer, () =>
          [
            ...renderApprovals(answer.approvals),
            "",
            `${answer.approvals.length} of ${answer.total} waiting${answer.truncated ? " (truncated: raise --limit for more)" : ""}`
          ].join("\n"))
      }
      const accounts = yield* reachedAccounts(client)
      const pages = yield* Effect.forEach(accounts, (account) => page(account.projectId), { concurrency: 4 })
      const approvals = pages.flatMap((answer) => answer.approvals)
        .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.actionId.localeCompare(b.actionId))
      const perAccount = accounts.map((account, i) => ({ ...account, total: pages[i]!.total, truncated: pages[i]!.truncated }))
      const answer = {
        approvals,
        total: perAccount.reduce((sum, a) => sum + a.total, 0),
        truncated: perAccount.some((a) => a.truncated),
        accounts: perAccount
      }
      const names = new Map(accounts.map((a) => [a.projectId, a.name]))
      yield* emit(input.json, answer, () =>
        [
          ...renderApprovals(approvals, (id) => names.get(id) ?? id),
          "",
          `${approvals.length} of ${answer.total} waiting in ${accounts.length} account${accounts.length === 1 ? "" : "s"}` +
          (answer.truncated ? " (truncated: raise --limit for more)" : "")
        ].join("\n"))
    }))
).pipe(Command.withDescription(
  "actions waiting for a human decision, oldest first, and what you may do with each; without a projectId, " +
    "every account's the key reaches (scope read)"
))

export const approveCommand = Command.make("approve", { projectId, actionId, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const answer = yield* client.approveAction({ path: { projectId: input.projectId, actionId: input.actionId } })
      yield* emit(input.json, answer, () => renderAction(answer))
    }))
).pipe(Command.withDescription("approve a pending action; its apply job is enqueued (write + canApprove)"))

export const rejectCommand = Command.make("reject", {
  projectId,
  actionId,
  reason: Options.text("reason").pipe(Options.withDescription("why, kept in the ledger"), Options.optional),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("rejectAction", {
        path: { projectId: input.projectId, actionId: input.actionId },
        payload: given({ reason: input.reason })
      })
      const answer = yield* client.rejectAction(request)
      yield* emit(input.json, answer, () => renderAction(answer))
    }))
).pipe(Command.withDescription("reject a pending action (write + canApprove)"))

export const revertCommand = Command.make("revert", {
  projectId,
  actionId,
  preview: Options.boolean("preview").pipe(
    Options.withDescription("a dry run: make the revert's checks, print what it would write, record nothing (read rate limit)")
  ),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const answer = yield* client.revertAction({
        path: { projectId: input.projectId, actionId: input.actionId },
        urlParams: input.preview ? { preview: true } : {}
      })
      yield* emit(input.json, answer, () => isProposalResponse(answer) ? renderProposal(answer) : renderPreview(answer))
    }))
).pipe(Command.withDescription(
  "undo an applied action: its compensating change is proposed and applied at once (write + canApprove); " +
    "--preview shows what it would write and records nothing"
))

export const ledgerCommand = Command.make("ledger", {
  projectId,
  limit,
  before: Options.text("before").pipe(
    Options.withDescription("the page after this cursor: the `next page` (nextBefore) of the previous page"),
    Options.optional
  ),
  status: Options.choice("status", ActionStatus.literals).pipe(Options.withDescription("only actions in this status"), Options.optional),
  kind: Options.text("kind").pipe(Options.withDescription("only actions of this kind, e.g. budget_change"), Options.optional),
  origin: Options.choice("origin", ["acs", "external"] as const).pipe(
    Options.withDescription("acs: changes proposed through acs; external: changes made outside acs"),
    Options.optional
  ),
  proposedBy: Options.text("proposed-by").pipe(
    Options.withDescription("only actions proposed by this key id, person id, or outside change's modifier (proposedBy.id)"),
    Options.optional
  ),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("listActions", {
        path: { projectId: input.projectId },
        urlParams: given({
          limit: input.limit,
          before: input.before,
          status: input.status,
          // As `propose` takes it: budget-change names budget_change; `checked` refuses an unknown kind.
          kind: Option.map(input.kind, (kind) => kind.replaceAll("-", "_") as ActionKindName),
          origin: input.origin,
          proposedBy: input.proposedBy
        })
      })
      const answer = yield* client.listActions(request)
      yield* emit(input.json, answer, () =>
        [
          renderTable([
            { header: "CREATED AT", cell: (a) => a.created_at },
            { header: "ACTION ID", cell: (a) => a.actionId },
            { header: "KIND", cell: (a) => a.kind },
            { header: "STATUS", cell: (a) => a.status },
            { header: "MODE", cell: (a) => a.mode },
            { header: "WARNINGS", cell: (a) => a.warnings.length === 0 ? null : a.warnings.length },
            { header: "SUMMARY", cell: (a) => a.summary }
          ], answer.actions),
          "",
          answer.nextBefore === null ? "last page" : `next page: --before ${answer.nextBefore}`
        ].join("\n"))
    }))
).pipe(Command.withDescription("the change ledger, newest first, a page at a time (scope read)"))
