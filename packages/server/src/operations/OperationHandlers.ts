/**
 * Every operation as one service method (docs/decisions/architecture.md): one handler per
 * operation of the table, `(grant: Granted<op>, input) => Effect<Success, Errors>`, its types derived from
 * the operation's HttpApi endpoint. REST handlers, RPC procedures and MCP tools check access, then call the
 * handler here; what is particular to a surface (HTTP status and headers, cookies, the MCP envelope) stays
 * with the surface, and the filtering and orchestration an operation needs lives in the services.
 */
import { InvalidRequest, NotFound } from "@acs/domain/Errors"
import { callerMay, maySecondApprove } from "@acs/domain/FourEyes"
import type { ProposalOperationName } from "@acs/domain/ProposalKinds"
import { DEFAULT_VERDICT_DAYS } from "@acs/domain/Guard"
import { clampLimit, DEFAULT_DAYS } from "@acs/domain/Warehouse"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { Accounts, toAccount } from "../accounts/Accounts.ts"
import { Brief } from "../accounts/Brief.ts"
import { Connections } from "../accounts/Connections.ts"
import { Approvals } from "../actions/pipeline/Approvals.ts"
import { ChangesetRevert } from "../actions/changesets/ChangesetRevert.ts"
import { Changesets } from "../actions/changesets/Changesets.ts"
import { catalog } from "../actions/kinds/Catalog.ts"
import { requestHash } from "../actions/pipeline/Idempotency.ts"
import { LEDGER_DEFAULT_LIMIT, LEDGER_MAX_LIMIT } from "@acs/domain/Actions"
import { Ledger } from "../actions/pipeline/Ledger.ts"
import { Proposals } from "../actions/pipeline/Proposals.ts"
import { Revert } from "../actions/pipeline/Revert.ts"
import type { Granted } from "../auth/Access.ts"
import { KeyStore, specFromRequest } from "../auth/KeyStore.ts"
import { OAuthGrants } from "../auth/OAuthGrants.ts"
import { Verdicts } from "../guard/Verdicts.ts"
import { People, toPerson } from "../auth/People.ts"
import { Sessions } from "../auth/Sessions.ts"
import { Audits } from "../plan/Audits.ts"
import { Plan } from "../plan/Plan.ts"
import { PolicyDocument } from "../actions/policy/PolicyDocument.ts"
import { Guardrails } from "../policy/Guardrails.ts"
import { Targets } from "../policy/Targets.ts"
import { Reports } from "../research/Reports.ts"
import { Research } from "../research/Research.ts"
import { OrgSettings } from "../settings/Settings.ts"
import { EventLog } from "../feeds/EventLog.ts"
import { SlackSigningSecrets } from "../webhooks/SlackSigningSecrets.ts"
import { Webhooks } from "../webhooks/Webhooks.ts"
import { freshnessFor, type ReadQuery, Reads } from "../warehouse/Reads.ts"
import { Recommendations } from "../warehouse/Recommendations.ts"
import { toSync } from "../warehouse/SyncRuns.ts"
import { SyncScheduler } from "../warehouse/SyncScheduler.ts"
import { Syncs } from "../warehouse/Syncs.ts"
import { windowEndingYesterday } from "../warehouse/Window.ts"
import { logoutRefusal, passwordRefusal, slackLinkRefusal } from "./Logout.ts"
import type { OperationHandler, OperationHandlerMap } from "./OperationTypes.ts"

export { toSync }

interface ReadParams {
  readonly days?: number | undefined
  readonly limit?: number | undefined
  readonly campaignId?: string | undefined
  readonly adGroupId?: string | undefined
}

const readQuery = (params: ReadParams | undefined): ReadQuery => ({
  days: params?.days ?? DEFAULT_DAYS,
  limit: clampLimit(params?.limit),
  campaignId: params?.campaignId,
  adGroupId: params?.adGroupId
})

/** The account's freshness over the default window, as the list answers carry it. */
const freshnessNow = (account: AccountRecord) =>
  Effect.map(Clock.currentTimeMillis, (now) => freshnessFor(account, windowEndingYesterday(now, account.timeZone, DEFAULT_DAYS), now))

type ProposalHandlers = { readonly [Op in ProposalOperationName]: OperationHandler<Op> }

export class OperationHandlers extends Effect.Service<OperationHandlers>()("acs/OperationHandlers", {
  effect: Effect.gen(function*() {
    const keys = yield* KeyStore
    const sessions = yield* Sessions
    const oauthGrants = yield* OAuthGrants
    const people = yield* People
    const settings = yield* OrgSettings
    const accounts = yield* Accounts
    const connections = yield* Connections
    const reads = yield* Reads
    const syncs = yield* Syncs
    const scheduler = yield* SyncScheduler
    const proposals = yield* Proposals
    const ledger = yield* Ledger
    const approvals = yield* Approvals
    const revert = yield* Revert
    const changesets = yield* Changesets
    const changesetRevert = yield* ChangesetRevert
    const policy = yield* PolicyDocument
    const targets = yield* Targets
    const guardrails = yield* Guardrails
    const verdicts = yield* Verdicts
    const plan = yield* Plan
    const recommendations = yield* Recommendations
    const audits = yield* Audits
    const brief = yield* Brief
    const reports = yield* Reports
    const research = yield* Research
    const events = yield* EventLog
    const webhooks = yield* Webhooks
    const slack = yield* SlackSigningSecrets
    // Some service methods still ask for the SQL client of the call; the operation map answers without requirements.
    const withSql = Effect.provideService(SqlClient.SqlClient, yield* SqlClient.SqlClient)

    /** One handler per proposal kind of the catalog: the kind's body, proposed on the granted account. */
    const proposalHandler = (kind: (typeof catalog)[number], path: string) =>
    (
      grant: Granted<ProposalOperationName>,
      input: {
        readonly payload: unknown
        readonly urlParams?: { readonly preview?: boolean | undefined } | undefined
        readonly headers?: { readonly "idempotency-key"?: string | undefined } | undefined
      }
    ) => {
      // A dry run writes nothing, so it has no idempotency row either: the key, if sent, is not looked at.
      if (input.urlParams?.preview === true) return proposals.preview(grant, kind, input.payload)
      const key = input.headers?.["idempotency-key"]
      return proposals.propose({
        grant,
        kind,
        body: input.payload,
        // What makes two proposals "the same": the kind's endpoint on this account, and the body.
        idempotency: key === undefined
          ? undefined
          : { key, hash: requestHash("POST", `/api/v1/accounts/${grant.account.projectId}/actions/${path}`, input.payload) }
      }).pipe(Effect.map(({ response }) => response))
    }

    // The proposal operations are generated from the kind catalog, as their endpoints are; the compiler cannot
    // follow a loop over it to the operation names, hence the one assertion (each handler takes its own
    // operation's grant and input, both narrower than the generic handler's).
    const proposalHandlers = Object.fromEntries(
      catalog.flatMap((kind) =>
        kind.declaration === undefined ? [] : [[kind.declaration.operation, proposalHandler(kind, kind.declaration.path)] as const]
      )
    ) as unknown as ProposalHandlers

    const handlers: OperationHandlerMap = {
      // auth
      getMe: (grant) => Effect.succeed({ principal: grant.principal }),
      logout: (grant) => logoutRefusal(grant),
      changePassword: (grant, { payload }) =>
        Effect.flatMap(passwordRefusal(grant), (personId) => sessions.changePassword(personId, payload.currentPassword, payload.newPassword)),
      linkSlackUser: (grant, { payload }) =>
        Effect.flatMap(slackLinkRefusal(grant), (personId) =>
          Effect.map(people.linkSlackUser(grant.principal.orgId, personId, payload.slackUserId), toPerson)),
      authorizeOAuthClient: (grant, { payload }) => oauthGrants.consent(grant, payload),
      listMyKeys: (grant) => Effect.map(keys.listOwn(grant), (list) => ({ keys: list, total: list.length, truncated: false })),
      revokeMyKey: (grant, { path }) => keys.revokeOwn(grant, path.keyId),
      // people
      listPeople: (grant) =>
        Effect.map(people.list(grant.principal.orgId), (rows) => ({ people: rows.map(toPerson), total: rows.length, truncated: false })),
      createPerson: (grant, { payload }) => people.add(grant.principal.orgId, payload),
      updatePerson: (grant, { path, payload }) => people.update(grant.principal.orgId, grant.principal.id, path.personId, payload ?? {}),
      revokePersonKeys: (grant, { path }) => keys.revokeRootedAt(grant, path.personId),
      // keys
      createKey: (grant, { payload }) => keys.create(grant, specFromRequest(payload)),
      listKeys: (grant) => Effect.map(keys.list(grant), (list) => ({ keys: list, total: list.length, truncated: false })),
      revokeKey: (grant, { path }) => keys.revoke(grant, path.keyId),
      createAccountKey: (grant, { payload }) =>
        keys.create(grant, {
          name: payload.name,
          scope: payload.scope,
          canApprove: payload.canApprove ?? false,
          binding: { kind: "account", projectId: grant.account.projectId },
          expiresAt: payload.expiresAt ?? null
        }),
      // settings
      getSettings: (grant) => settings.get(grant),
      updateSettings: (grant, { payload }) => settings.update(grant, payload ?? {}),
      getSlackIntegration: (grant) => slack.get(grant),
      setSlackSigningSecret: (grant, { payload }) => slack.set(grant, payload.signingSecret),
      // accounts
      listAccounts: (grant) =>
        Effect.map(accounts.listReachable(grant), (rows) => ({ accounts: rows.map(toAccount), total: rows.length, truncated: false })),
      getAccount: (grant) =>
        Effect.map(freshnessNow(grant.account), (dataFreshness) => ({ account: toAccount(grant.account), dataFreshness })),
      importAccounts: (grant, { payload }) =>
        Effect.map(syncs.importAccounts(grant, payload.upstreamAccountIds), (imported) => ({ accounts: imported })).pipe(withSql),
      // connection
      getConnection: (grant) => connections.get(grant),
      updateConnection: (grant, { payload }) => connections.update(grant, payload),
      createConnectionKeyPair: (grant) => connections.createKeyPair(grant),
      discoverAccounts: (grant) => connections.discover(grant),
      // warehouse
      listCampaigns: (grant, { urlParams }) =>
        Effect.map(reads.campaigns(grant, readQuery(urlParams)), ({ rows, ...rest }) => ({ campaigns: rows, ...rest })),
      listAdGroups: (grant, { urlParams }) =>
        Effect.map(reads.adGroups(grant, readQuery(urlParams)), ({ rows, ...rest }) => ({ adGroups: rows, ...rest })),
      listKeywords: (grant, { urlParams }) =>
        Effect.map(reads.keywords(grant, readQuery(urlParams)), ({ rows, ...rest }) => ({ keywords: rows, ...rest })),
      listSearchTerms: (grant, { urlParams }) =>
        Effect.map(reads.searchTerms(grant, readQuery(urlParams)), ({ rows, ...rest }) => ({ searchTerms: rows, ...rest })),
      listAds: (grant, { urlParams }) =>
        Effect.map(reads.ads(grant, readQuery(urlParams)), ({ rows, ...rest }) => ({ ads: rows, ...rest })),
      listNegativeKeywords: (grant, { urlParams }) =>
        Effect.map(reads.negativeKeywords(grant, readQuery(urlParams)), ({ rows, ...rest }) => ({ negativeKeywords: rows, ...rest })),
      listSyncs: (grant, { urlParams }) =>
        Effect.gen(function*() {
          const { rows, total } = yield* syncs.history(grant, clampLimit(urlParams?.limit))
          return { syncs: rows.map(toSync), total, truncated: rows.length < total, dataFreshness: yield* freshnessNow(grant.account) }
        }),
      getSync: (grant, { path }) =>
        Effect.gen(function*() {
          const row = yield* syncs.find(grant, path.syncId)
          if (row === undefined) return yield* new NotFound({ message: `no sync ${path.syncId} in this account` })
          return toSync(row)
        }),
      startSync: (grant) => Effect.map(syncs.start(grant), toSync).pipe(withSql),
      getSyncQueue: (grant) => scheduler.queue(grant),
      // proposals
      ...proposalHandlers,
      // actions
      listActions: (grant, { urlParams }) =>
        ledger.list(grant, {
          limit: Math.min(LEDGER_MAX_LIMIT, Math.max(1, urlParams?.limit ?? LEDGER_DEFAULT_LIMIT)),
          before: urlParams?.before,
          status: urlParams?.status,
          kind: urlParams?.kind,
          origin: urlParams?.origin,
          proposedBy: urlParams?.proposedBy,
          verdict: urlParams?.verdict
        }),
      getAction: (grant, { path }) => ledger.get(grant, path.actionId),
      listApprovals: (grant, { urlParams }) =>
        Effect.gen(function*() {
          const { rows, total } = yield* ledger.pending(grant, clampLimit(urlParams?.limit))
          const { fourEyes } = yield* settings.read(grant.orgId)
          const approvals = rows.map((row) => {
            const may = callerMay(fourEyes, grant.principal, row.proposedBy)
            // A high-risk change approved once waits for another person than the first (docs/contract.md 3.3).
            const second = row.approvals[0] === undefined ? undefined : maySecondApprove(row.approvals[0].by, grant.principal)
            return { ...row, callerMay: may.approve && second?.allowed === false ? { ...may, approve: false, reason: second.reason } : may }
          })
          return { approvals, total, truncated: rows.length < total, dataFreshness: yield* freshnessNow(grant.account) }
        }),
      approveAction: (grant, { path }) => approvals.approve(grant, path.actionId),
      rejectAction: (grant, { path, payload }) => approvals.reject(grant, path.actionId, payload?.reason),
      revertAction: (grant, { path, urlParams }) =>
        urlParams?.preview === true ? revert.preview(grant, path.actionId).pipe(withSql) : revert.revert(grant, path.actionId).pipe(withSql),
      // changesets
      openChangeset: (grant, { payload }) => changesets.open(grant, payload),
      addChangesetMembers: (grant, { path, payload }) => changesets.addMembers(grant, path.changesetId, payload),
      submitChangeset: (grant, { path, urlParams }) => changesets.submit(grant, path.changesetId, urlParams?.preview === true),
      approveChangeset: (grant, { path, payload }) => changesets.approve(grant, path.changesetId, payload.planHash),
      rejectChangeset: (grant, { path, payload }) => changesets.reject(grant, path.changesetId, payload?.reason),
      revertChangeset: (grant, { path, payload, urlParams }) =>
        urlParams?.preview === true
          ? changesetRevert.preview(grant, path.changesetId)
          : changesetRevert.revert(grant, path.changesetId, payload?.force ?? []),
      listChangesets: (grant, { urlParams }) => changesets.list(grant, urlParams?.status, clampLimit(urlParams?.limit)),
      getChangeset: (grant, { path }) => changesets.get(grant, path.changesetId),
      getPolicy: (grant) => policy.get(grant).pipe(withSql),
      listRecommendations: (grant, { urlParams }) => recommendations.list(grant.account, urlParams?.campaignId),
      getVerdicts: (grant, { urlParams }) => verdicts.summary(grant, urlParams?.days ?? DEFAULT_VERDICT_DAYS),
      getTargets: (grant) => targets.get(grant),
      updateTargets: (grant, { payload }) => targets.put(grant, payload),
      getGuardrails: (grant) => guardrails.get(grant),
      updateGuardrails: (grant, { payload }) => guardrails.put(grant, payload),
      resumeAutoApply: (grant) => guardrails.resume(grant),
      // insights
      getPlan: (grant, { urlParams }) => plan.get(grant, clampLimit(urlParams?.limit)),
      runAudit: (grant) => audits.run(grant),
      getAudit: (grant, { path }) => audits.get(grant, path.auditId),
      getBrief: (grant) => brief.get(grant),
      updateBrief: (grant, { payload }) => brief.put(grant, payload.text),
      // research
      runReport: (grant, { payload }) => reports.run(grant, payload),
      searchApps: (grant, { payload }) => research.apps(grant, payload),
      searchGeo: (grant, { payload }) => research.geo(grant, payload),
      keywordIdeas: (grant, { payload }) => research.keywordIdeas(grant, payload),
      // events and webhooks
      listEvents: (grant, { urlParams }) => events.list(grant, urlParams ?? {}),
      // A stream, not one answer: REST serves it as SSE (http/EventsExtras.ts), RPC through `operate.streamEvents`;
      // both open it with feeds/EventStream.ts `openFor`.
      streamEvents: () =>
        Effect.fail(new InvalidRequest({ message: "the event stream is GET /api/v1/events/stream (SSE) or the RPC procedure streamEvents" })),
      createWebhook: (grant, { payload }) => webhooks.create(grant, payload),
      listWebhooks: (grant) => webhooks.list(grant),
      deleteWebhook: (grant, { path }) => webhooks.remove(grant, path.webhookId),
      testWebhook: (grant, { path }) => webhooks.test(grant, path.webhookId),
      enableWebhook: (grant, { path }) => webhooks.enable(grant, path.webhookId),
      listWebhookDeliveries: (grant, { path, urlParams }) => webhooks.deliveries(grant, path.webhookId, urlParams?.limit ?? 50)
    }
    return handlers
  })
}) {}
