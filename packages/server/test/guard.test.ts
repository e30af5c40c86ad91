/**
 * The guard (docs/contract.md 3.4) end to end in one process: changes applied through the pipeline to the simulator,
 * the simulator's clock and acs's moved a week on together, syncs that bring the days after the apply, and the
 * reviews they start. acs's clock is Effect's Clock, shifted here by as much as the simulator's (a server process
 * cannot be told the time), everything else is real: the database, the upstream over HTTP, the apply worker.
 */
import type { ActionRecord } from "@acs/domain/Actions"
import type { Principal } from "@acs/domain/Principal"
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { type Simulator, startSimulator } from "@acs/upstream/simulator/Simulator"
import { ConfigProvider, Context, Duration, Effect, Layer, Metric, MetricLabel, Option, Schedule, Schema } from "effect"
import { expect } from "vitest"
import type { AccountRecord } from "../src/accounts/AccountRecord.ts"
import { Accounts } from "../src/accounts/Accounts.ts"
import { Connections } from "../src/accounts/Connections.ts"
import { kindNamed } from "../src/actions/kinds/Catalog.ts"
import { Changesets } from "../src/actions/changesets/Changesets.ts"
import { OutsideChanges } from "../src/actions/outside/OutsideChanges.ts"
import { Approvals } from "../src/actions/pipeline/Approvals.ts"
import { Ledger } from "../src/actions/pipeline/Ledger.ts"
import { Proposals } from "../src/actions/pipeline/Proposals.ts"
import { Access } from "../src/auth/Access.ts"
import { AfterSyncLive } from "../src/guard/AfterSyncLive.ts"
import { SpendAnomaly } from "../src/guard/SpendAnomaly.ts"
import { Verdicts } from "../src/guard/Verdicts.ts"
import { Watches } from "../src/guard/Watches.ts"
import { RateLimits } from "../src/limits/RateLimits.ts"
import { guardReviews } from "../src/telemetry/Metrics.ts"
import { Jobs } from "../src/queue/Jobs.ts"
import { OrgSettings } from "../src/settings/Settings.ts"
import { DEFAULT_GUARD } from "@acs/domain/Guard"
import { UpstreamTransportLive } from "@acs/upstream/UpstreamTransport"
import { SimulatorEndpoint, UpstreamLive } from "../src/upstream/UpstreamLive.ts"
import { makeSync } from "../src/warehouse/Sync.ts"
import { SyncRuns } from "../src/warehouse/SyncRuns.ts"
import { Syncs } from "../src/warehouse/Syncs.ts"
import { ChangesetRun } from "../src/worker/ChangesetRun.ts"
import { Apply } from "../src/worker/Apply.ts"
import { WorkerLive } from "../src/worker/Worker.ts"
import { makeShiftedClock } from "./support/shiftedClock.ts"
import { WAIT_MS } from "./support/wait.ts"

/** Two orgs on the one simulator: the default guard (a failed change's revert waits for a person), and auto_revert. */
const ORG = "org_guard"
const ORG_AUTO = "org_guard_auto"
const DAY_MS = 86_400_000

/** An org's write key (its proposals wait for review) and an admin person, another root. */
const agentOf = (orgId: string): Principal => ({
  kind: "key",
  id: `key_${orgId}`,
  name: "bidding agent",
  orgId,
  scope: "write",
  canApprove: false,
  binding: { kind: "org" },
  role: null,
  expiresAt: null,
  root: { kind: "key", id: `key_${orgId}`, name: "bidding agent" }
})

const reviewerOf = (orgId: string): Principal => ({
  kind: "person",
  id: `psn_${orgId}`,
  name: "guard reviewer",
  orgId,
  scope: "admin",
  canApprove: true,
  binding: { kind: "org" },
  role: "admin",
  expiresAt: null,
  root: { kind: "person", id: `psn_${orgId}`, name: "guard reviewer" }
})

/** acs's clock in this process, moved on with the simulator's. */
const time = makeShiftedClock()
const shifted = time.clock

/** The simulator in this process: its clock, scenarios and web UI are the test's to drive. */
class TestSimulator extends Context.Tag("test/Simulator")<TestSimulator, Simulator>() {}
const SimulatorUnderTest = Layer.scoped(
  TestSimulator,
  Effect.acquireRelease(Effect.promise(() => startSimulator({ seed: 5, port: 0, host: "127.0.0.1" })), (s) => Effect.promise(() => s.close()))
)
const Endpoint = Layer.effect(SimulatorEndpoint, Effect.map(TestSimulator, (s) => ({ url: s.url, credentials: s.credentials })))

const TestLayer = WorkerLive.pipe(
  Layer.provideMerge(Layer.mergeAll(Syncs.Default, Access.Default, Verdicts.Default, Changesets.Default)),
  Layer.provideMerge(AfterSyncLive),
  Layer.provideMerge(Layer.mergeAll(Watches.Default, SpendAnomaly.Default)),
  Layer.provideMerge(Layer.mergeAll(Accounts.Default, RateLimits.Default, Jobs.Default, ChangesetRun.Default, OutsideChanges.Default, SyncRuns.Default)),
  Layer.provideMerge(Layer.mergeAll(Proposals.Test, Approvals.Test, Apply.Test)),
  Layer.provideMerge(UpstreamLive.pipe(Layer.provideMerge(Endpoint), Layer.provideMerge(SimulatorUnderTest), Layer.provide(UpstreamTransportLive))),
  Layer.provide(Layer.setClock(shifted)),
  Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([
    ["ACS_SECRETS_KEY", Buffer.alloc(32, 9).toString("base64")],
    ["WORKER_CONCURRENCY", "2"],
    ["SYNC_INTERVAL_MINUTES", "0"],
    ["SYNC_INITIAL_DAYS", "30"]
  ]))))
)

/** Both clocks a number of days (or hours) on. */
const advance = (by: { readonly days?: number; readonly hours?: number }) =>
  Effect.map(TestSimulator, (simulator) => {
    simulator.control.advanceClock(by)
    time.shift((by.days ?? 0) * DAY_MS + (by.hours ?? 0) * 3_600_000)
  })
const advanceDays = (days: number) => advance({ days })

/**
 * From now on, the entity converts `percent` % better (negative: worse) per tap, and serves every day: a source
 * has quiet days at random, and a review of a day without data is inconclusive, whatever the dates of the run.
 */
const convertsFromNow = (entityId: string, percent: number) =>
  Effect.map(TestSimulator, (simulator) => {
    expect(simulator.control.addScenario({ entityId: Number(entityId), installsPerTapPercent: percent, everyDay: true })).not.toBeNull()
  })

const Candidate = Schema.Struct({
  keywordId: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  bidMicros: Schema.NumberFromString,
  taps: Schema.NumberFromString,
  installs: Schema.NumberFromString
})

/** Active keywords with their bids and their taps and installs over the 7 days before today, busiest first, one per ad group. */
const keywordsByVolume = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`
      SELECT DISTINCT ON (k.ad_group_id) k.keyword_id, k.ad_group_id, k.campaign_id, k.bid_micros,
        sum(m.taps)::text AS taps, sum(m.installs)::text AS installs
      FROM keywords k
      JOIN campaigns c ON c.project_id = k.project_id AND c.campaign_id = k.campaign_id AND c.status = 'ENABLED'
      JOIN ad_groups g ON g.project_id = k.project_id AND g.ad_group_id = k.ad_group_id AND g.status = 'ENABLED'
      JOIN daily_metrics m ON m.project_id = k.project_id AND m.level = 'keywords' AND m.entity_key = k.keyword_id
        AND m.day > (SELECT last_synced_day FROM accounts WHERE project_id = ${projectId}) - 7
      WHERE k.project_id = ${projectId} AND k.status = 'ACTIVE' AND k.bid_micros IS NOT NULL
      GROUP BY k.keyword_id, k.ad_group_id, k.campaign_id, k.bid_micros
      ORDER BY k.ad_group_id, sum(m.taps) DESC`.pipe(
      Effect.flatMap(Schema.decodeUnknown(Schema.Array(Candidate))),
      Effect.map((rows) => [...rows].sort((a, b) => b.taps - a.taps))
    ))

const statusOf = (actionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly status: string }>`SELECT status FROM actions WHERE action_id = ${actionId}`.pipe(Effect.map((rows) => rows[0]?.status)))

const waitFor = <A>(what: string, read: Effect.Effect<A, unknown, SqlClient.SqlClient>, done: (a: A) => boolean) =>
  read.pipe(
    Effect.repeat({ schedule: Schedule.spaced(Duration.millis(100)), until: done }),
    Effect.timeoutFail({ duration: Duration.millis(WAIT_MS), onTimeout: () => new Error(`waited for ${what}`) })
  )

/** A key's changeset of keyword bid changes, submitted, approved by the person and applied; the changeset's id. */
const applyChangeset = (account: AccountRecord, bids: ReadonlyArray<{ readonly keywordId: string; readonly newBidMicros: number }>) =>
  Effect.gen(function*() {
    const access = yield* Access
    const changesets = yield* Changesets
    const agent = agentOf(account.orgId)
    const opened = yield* changesets.open(yield* access.checkAs(agent, "openChangeset", account.projectId, false), { title: "Raise two bids" })
    yield* changesets.addMembers(yield* access.checkAs(agent, "addChangesetMembers", account.projectId, false), opened.changesetId, {
      proposals: bids.map((bid) => ({ kind: "keyword_bid_change", body: { keywordIds: [bid.keywordId], newBidMicros: bid.newBidMicros, reason: "the guard test" } }))
    })
    const submitted = yield* changesets.submit(yield* access.checkAs(agent, "submitChangeset", account.projectId, false), opened.changesetId, false)
    yield* changesets.approve(yield* access.checkAs(reviewerOf(account.orgId), "approveChangeset", account.projectId, false), opened.changesetId, submitted.planHash!)
    const statusOfChangeset = Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ readonly status: string }>`SELECT status FROM changesets WHERE changeset_id = ${opened.changesetId}`.pipe(Effect.map((rows) => rows[0]?.status)))
    yield* waitFor(`${opened.changesetId} applied`, statusOfChangeset, (status) => status === "applied" || status === "failed" || status === "partially_applied")
    expect(yield* statusOfChangeset).toBe("applied")
    return opened.changesetId
  })

/** A bid in whole cents, as the platform takes it. */
const wholeCents = (micros: number) => Math.round(micros / 10_000) * 10_000

/** A key's bid change approved by the person and applied upstream; the action's id. */
const changeBid = (account: AccountRecord, keywordId: string, newBidMicros: number) =>
  Effect.gen(function*() {
    const access = yield* Access
    const proposed = yield* (yield* Proposals).propose({
      grant: yield* access.checkAs(agentOf(account.orgId), "proposeKeywordBidChange", account.projectId, false),
      kind: kindNamed("keyword_bid_change"),
      body: { keywordIds: [keywordId], newBidMicros, reason: "the guard test" },
      idempotency: undefined
    }).pipe(Effect.tapError((e) => Effect.logError("proposal refused", e)))
    const actionId = proposed.response.actionId
    yield* (yield* Approvals).approve(yield* access.checkAs(reviewerOf(account.orgId), "approveAction", account.projectId, false), actionId)
    yield* waitFor(`${actionId} applied`, statusOf(actionId), (status) => status === "applied" || status === "failed")
    expect(yield* statusOf(actionId)).toBe("applied")
    return actionId
  })

const actionOf = (projectId: string, actionId: string) =>
  Effect.flatMap(Ledger, (ledger) => ledger.find(projectId, actionId)).pipe(Effect.map((action): ActionRecord => action!))

const verdictEvents = (actionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly n: string }>`SELECT count(*)::text AS n FROM events WHERE type = 'action.verdict' AND data #>> '{action,actionId}' = ${actionId}`.pipe(
      Effect.map((rows) => Number(rows[0]!.n))
    ))

/** An org connected to the simulator (v1), the upstream account in `currency` imported as its account and synced. */
const arrange = (orgId: string, currency: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connections = yield* Connections
    const accounts = yield* Accounts
    yield* sql`INSERT INTO orgs (org_id, name) VALUES (${orgId}, ${orgId})`
    yield* connections.save(orgId, { provider: "simulator", apiVersion: "v1" })
    const client = yield* connections.clientFor(orgId)
    const upstream = (yield* client.accounts).find((a) => !a.readOnly && a.currency === currency)!
    const imported = yield* connections.importInto(orgId, [upstream.upstreamAccountId])
    const account = Option.getOrThrow(yield* accounts.find(imported.created[0]!))
    expect((yield* (yield* Syncs).runToEnd(account, "manual"))?.status).toBe("succeeded")
    return Option.getOrThrow(yield* accounts.find(account.projectId))
  })

layer(TestLayer, { excludeTestServices: true, timeout: Duration.minutes(10) })("the guard", (it) => {
  it.effect("judges applied bid changes a week on: a worse CPA fails and its revert waits for a person (or applies under auto_revert), a changeset's revert is one changeset, a small raise passes, thin data and an outside change are inconclusive, each review made once across instances", () =>
    Effect.gen(function*() {
      const account = yield* arrange(ORG, "USD")
      const autoAccount = yield* arrange(ORG_AUTO, "EUR")
      yield* (yield* OrgSettings).update(yield* (yield* Access).checkAs(reviewerOf(ORG_AUTO), "updateSettings", undefined, false), {
        guard: { ...DEFAULT_GUARD, onFail: "auto_revert" }
      })
      const simulator = yield* TestSimulator
      const keywords = yield* keywordsByVolume(account.projectId)
      const [hurt, helped, outside] = keywords
      const thin = keywords.findLast((k) => k.taps > 0 && k.taps < 60 && k.installs < 6)
      expect(hurt && helped && outside && thin, "four keywords in four ad groups, one of them thin").toBeTruthy()
      const [autoHurt] = yield* keywordsByVolume(autoAccount.projectId)
      // A changeset's two raises in a campaign none of the others touch, which converts half as well from now on.
      const taken = new Set([hurt, helped, outside, thin].map((k) => k!.campaignId))
      const together = keywords.filter((k) => !taken.has(k.campaignId) && k.campaignId === keywords.find((j) => !taken.has(j.campaignId))?.campaignId).slice(0, 2)
      expect(together, "two keywords of a campaign the others leave alone").toHaveLength(2)

      // A 50 % raise whose keyword converts half as well from now on (in both orgs); a 10 % raise (CPA +4 % by the
      // elasticity); a raise on a keyword too quiet to judge; a raise whose ad group someone changes in the web UI.
      const hurtId = yield* changeBid(account, hurt!.keywordId, wholeCents(hurt!.bidMicros * 1.5))
      yield* convertsFromNow(hurt!.keywordId, -50)
      const autoHurtId = yield* changeBid(autoAccount, autoHurt!.keywordId, wholeCents(autoHurt!.bidMicros * 1.5))
      yield* convertsFromNow(autoHurt!.keywordId, -50)
      const helpedId = yield* changeBid(account, helped!.keywordId, wholeCents(helped!.bidMicros * 1.1))
      yield* convertsFromNow(helped!.keywordId, 0)
      const thinId = yield* changeBid(account, thin!.keywordId, wholeCents(thin!.bidMicros * 1.1))
      const outsideId = yield* changeBid(account, outside!.keywordId, wholeCents(outside!.bidMicros * 1.1))
      const changesetId = yield* applyChangeset(account, together.map((k) => ({ keywordId: k.keywordId, newBidMicros: wholeCents(k.bidMicros * 1.5) })))
      yield* convertsFromNow(together[0]!.campaignId, -50)
      const webUi = simulator.webUiWrite({
        adAccountId: Number(account.upstreamAccountId),
        method: "PUT",
        path: `/v1/adgroups/${outside!.adGroupId}`,
        body: { defaultBid: { amount: "0.77", currency: account.currency } },
        user: "web-ui-user@example.com"
      })
      expect(webUi.status, JSON.stringify(webUi.body)).toBe(200)

      // Two hours on: the sync opens the watches, and their hourly lane (spend only) from the platform's hourly report.
      yield* advance({ hours: 2 })
      expect((yield* (yield* Syncs).runToEnd(account, "manual"))?.status).toBe("succeeded")
      const lane = (yield* actionOf(account.projectId, helpedId)).watch
      expect(lane).toMatchObject({ verdict: "pending", reviews: [], hourly: { hours: 1 } })

      // Two days on: the sync makes the 1-day reviews (baseline: the 7 days before the applied day).
      yield* advanceDays(2)
      expect((yield* (yield* Syncs).runToEnd(account, "manual"))?.status).toBe("succeeded")
      const early = yield* actionOf(account.projectId, helpedId)
      expect(early.watch).toMatchObject({ level: "keywords", entityIds: [helped!.keywordId], reviews: [{ afterDays: 1 }] })
      expect(early.watch!.baseline!.days).toBe(7)
      expect(early.watch!.baseline!.taps).toBeGreaterThan(0)
      // The worse CPA shows at once, as a warning: the last review decides whether the undo is proposed.
      const hurtEarly = yield* actionOf(account.projectId, hurtId)
      expect(hurtEarly.watch).toMatchObject({ verdict: "failed", reviews: [{ afterDays: 1, verdict: "failed" }], revertActionId: null })

      // Six more days: the 7-day reviews, made by two instances at once, each once.
      yield* advanceDays(6)
      const sync = yield* makeSync
      const client = yield* (yield* Connections).clientFor(ORG)
      yield* sync.run(client, yield* (yield* SyncRuns).start(ORG, account.projectId, "manual"), account)
      const instances = yield* Effect.all([Watches.Default, Watches.Default].map((l) => Layer.build(Layer.fresh(l))))
      const synced = Option.getOrThrow(yield* (yield* Accounts).find(account.projectId))
      yield* Effect.all(instances.map((context) => Effect.flatMap(Watches, (w) => w.pass(synced, undefined)).pipe(Effect.provide(context))), {
        concurrency: "unbounded"
      })

      const judged = yield* actionOf(account.projectId, hurtId)
      expect(judged.watch?.reviews.map((r) => [r.afterDays, r.verdict])).toEqual([[1, "failed"], [7, "failed"]])
      expect(yield* verdictEvents(hurtId)).toBe(2)
      const revertId = judged.watch?.revertActionId
      expect(revertId).toBeTruthy()
      const revert = yield* actionOf(account.projectId, revertId!)
      expect(revert).toMatchObject({ revertOf: hurtId, status: "proposed", mode: "queued", proposedBy: { kind: "system", id: "guard" } })
      expect(revert.reason).toMatch(/^the guard: failed at the 7-day review: cost per install \+\d+\.\d%, past the \+20% failure line/)

      const passed = yield* actionOf(account.projectId, helpedId)
      expect(passed.watch).toMatchObject({ verdict: "passed", revertActionId: null, nextReviewDay: null })
      expect(passed.watch?.reviews).toHaveLength(2)

      const quiet = yield* actionOf(account.projectId, thinId)
      expect(quiet.watch?.verdict).toBe("inconclusive")
      expect(quiet.watch?.reviews[1]?.reasons.join(" ")).toMatch(/too little data/)

      const confounded = yield* actionOf(account.projectId, outsideId)
      expect(confounded.watch?.verdict).toBe("inconclusive")
      expect(confounded.watch?.reviews[1]?.reasons.join(" ")).toMatch(/confounded: a change outside acs on \d{4}-\d\d-\d\d: .*web-ui-user@example\.com/)

      // The changeset's members are judged together, on their campaign, and its revert is one compensating changeset.
      const member = yield* actionOf(account.projectId, (yield* (yield* Ledger).members({ projectId: account.projectId, changesetId }))[0]!.actionId)
      expect(member.watch).toMatchObject({ level: "campaigns", entityIds: [together[0]!.campaignId], changesetId, verdict: "failed", revertActionId: null })
      const compensating = yield* (yield* Changesets).get(
        yield* (yield* Access).checkAs(reviewerOf(ORG), "getChangeset", account.projectId, false),
        member.watch!.revertChangesetId!
      )
      expect(compensating.changeset).toMatchObject({ status: "queued", revertOf: changesetId, openedBy: { kind: "system", id: "guard" }, members: { total: 2, pending: 2 } })
      expect(compensating.changeset.reason).toMatch(/^the guard: failed at the 7-day review: /)

      // The ledger filters by verdict.
      const failedPage = yield* (yield* Ledger).list(
        yield* (yield* Access).checkAs(reviewerOf(ORG), "listActions", account.projectId, false),
        { limit: 50, before: undefined, status: undefined, kind: undefined, origin: undefined, proposedBy: undefined, verdict: "failed" }
      )
      const members = (yield* (yield* Ledger).members({ projectId: account.projectId, changesetId })).map((m) => m.actionId)
      expect(failedPage.actions.map((a) => a.actionId).sort()).toEqual([hurtId, ...members].sort())

      // Under auto_revert the undo applies like any auto-applied proposal.
      expect((yield* (yield* Syncs).runToEnd(autoAccount, "manual"))?.status).toBe("succeeded")
      const autoJudged = yield* actionOf(autoAccount.projectId, autoHurtId)
      expect(autoJudged.watch?.verdict, JSON.stringify(autoJudged.watch?.reviews.map((r) => r.reasons))).toBe("failed")
      const autoRevertId = autoJudged.watch!.revertActionId!
      expect(autoRevertId, autoJudged.watch?.revertNote ?? "").toBeTruthy()
      yield* waitFor(`${autoRevertId} applied`, statusOf(autoRevertId), (status) => status === "applied" || status === "failed")
      expect(yield* actionOf(autoAccount.projectId, autoRevertId)).toMatchObject({ status: "applied", mode: "auto_applied", revertOf: autoHurtId })
      expect(yield* statusOf(autoHurtId)).toBe("reverted")

      // The track record: the account's five judged changes (a changeset counts once) by their last verdict, all the agent's; a
      // one-day window (acs's today is a week after the applies) holds none of them.
      const verdicts = yield* Verdicts
      const record = yield* verdicts.summary(yield* (yield* Access).checkAs(agentOf(ORG), "getVerdicts", account.projectId, false), 30)
      const total = { passed: 1, failed: 2, inconclusive: 2, pending: 0 }
      expect(record).toMatchObject({
        days: 30,
        total,
        byKind: [{ kind: "keyword_bid_change", passed: 1, failed: 1, inconclusive: 2, pending: 0 }, { kind: "changeset", passed: 0, failed: 1, inconclusive: 0, pending: 0 }],
        byProposer: [{ proposedBy: { kind: "key", id: `key_${ORG}`, name: "bidding agent" }, ...total }]
      })
      const today = yield* verdicts.summary(yield* (yield* Access).checkAs(agentOf(ORG), "getVerdicts", account.projectId, false), 1)
      expect(today).toMatchObject({ days: 1, total: { passed: 0, failed: 0, inconclusive: 0, pending: 0 }, byKind: [], byProposer: [] })

      // Each review counted once in the metric, by its verdict, as the watches recorded them (both orgs).
      const sql = yield* SqlClient.SqlClient
      const recorded = yield* sql<{ readonly verdict: string; readonly n: number }>`
        SELECT r ->> 'verdict' AS verdict, count(*)::int AS n FROM watches, jsonb_array_elements(record -> 'reviews') r GROUP BY 1`
      for (const verdict of ["passed", "failed", "inconclusive"]) {
        const counted = yield* Metric.value(Metric.taggedWithLabels(guardReviews, [MetricLabel.make("verdict", verdict)]))
        expect([verdict, counted.count]).toEqual([verdict, recorded.find((row) => row.verdict === verdict)?.n ?? 0])
      }
      expect(recorded.find((row) => row.verdict === "failed")?.n).toBeGreaterThanOrEqual(3)

      // A changeset larger than a batch of the pass (1,000 changes) is still one watch over all its members.
      const bigChangeset = `${changesetId}_big`
      yield* sql`
        INSERT INTO changesets (changeset_id, org_id, project_id, title, on_failure, status, opened_by, applied_at)
        SELECT ${bigChangeset}, org_id, project_id, 'Raise 1,001 bids', on_failure, 'applied', opened_by, applied_at
        FROM changesets WHERE changeset_id = ${changesetId}`
      yield* sql`
        INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
          payload, proposed_by, created_at, decided_at, applied_at, changeset_id)
        SELECT a.action_id || '_' || i, a.org_id, a.project_id, a.kind, a.mode, 'applied', a.risk_tier, a.policy_reasons, a.summary,
          a.reason, a.payload, a.proposed_by, now() + i * interval '1 millisecond', now(), now(), ${bigChangeset}
        FROM actions a, generate_series(1, 1001) i WHERE a.action_id = ${members[0]!}`
      yield* (yield* Watches).pass(Option.getOrThrow(yield* (yield* Accounts).find(account.projectId)), undefined)
      const [big] = yield* sql<{ readonly n: number }>`SELECT cardinality(action_ids) AS n FROM watches WHERE watch_id = ${bigChangeset}`
      expect(big?.n).toBe(1001)
    }).pipe(Effect.withClock(shifted), Effect.scoped, Effect.orDie))

  it.effect("pauses the account's auto-apply when an hour's spend is past 3 × its usual, and says why", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const simulator = yield* TestSimulator
      const accounts = yield* Accounts
      const projectId = (yield* sql<{ readonly projectId: string }>`SELECT project_id FROM accounts WHERE org_id = ${ORG}`)[0]!.projectId
      const account = Option.getOrThrow(yield* accounts.find(projectId))
      const [campaign] = yield* sql<{ readonly campaignId: string; readonly dailyBudgetMicros: string }>`
        SELECT c.campaign_id, c.daily_budget_micros::text AS daily_budget_micros FROM campaigns c
        JOIN daily_metrics m ON m.project_id = c.project_id AND m.level = 'campaigns' AND m.entity_key = c.campaign_id
        WHERE c.project_id = ${projectId} AND c.status = 'ENABLED' AND c.daily_budget_micros IS NOT NULL
        GROUP BY c.campaign_id, c.daily_budget_micros ORDER BY sum(m.spend_micros) DESC LIMIT 1`
      // Someone lifts the budget thirtyfold in the web UI, and from now on every tap costs ten times as much.
      const lifted = simulator.webUiWrite({
        adAccountId: Number(account.upstreamAccountId),
        method: "PUT",
        path: `/v1/campaigns/${campaign!.campaignId}`,
        body: { dailyBudget: { value: { amount: (Number(campaign!.dailyBudgetMicros) * 30 / 1_000_000).toFixed(2), currency: account.currency } } },
        user: "web-ui-user@example.com"
      })
      expect(lifted.status, JSON.stringify(lifted.body)).toBe(200)
      expect(simulator.control.addScenario({ entityId: Number(campaign!.campaignId), cptPercent: 900 })).not.toBeNull()
      yield* advance({ hours: 2 })
      expect((yield* (yield* Syncs).runToEnd(account, "manual"))?.status).toBe("succeeded")

      const [paused] = yield* sql<{ readonly pausedReason: string | null }>`SELECT paused_reason FROM guardrails WHERE project_id = ${projectId}`
      expect(paused?.pausedReason).toMatch(/^spend anomaly: [\d.]+ USD spent in the hour \d{4}-\d\d-\d\d \d\d:00, \d+\.\d× its usual [\d.]+ USD \(past 3×\)$/)
      const [event] = yield* sql<{ readonly by: string }>`
        SELECT data ->> 'by' AS by FROM events WHERE project_id = ${projectId} AND type = 'account.paused'`
      expect(event?.by).toBe("spend-anomaly breaker")
    }).pipe(Effect.withClock(shifted), Effect.orDie))
})
