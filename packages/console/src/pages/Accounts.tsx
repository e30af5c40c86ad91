/**
 * Accounts: each with its freshness (last sync, coverage, warnings) and its place in the sync queue; the one chosen with its campaigns and
 * keywords (the spend-ranked reads), the plan whose items are one click from a proposal (a preview first,
 * then the proposal), and syncs with their progress.
 */
import type { ProposalPreview, ProposalResponse } from "@acs/domain/Actions"
import type { PlanItem } from "@acs/domain/Plan"
import type { SyncQueueEntry } from "@acs/domain/Warehouse"
import { proposalKinds } from "@acs/domain/ProposalKinds"
import type { Effect } from "effect"
import { Either } from "effect"
import { useEffect, useState } from "preact/hooks"
import { api, apiOrThrow, type Client } from "../api.ts"
import { AccountPicker, DiffTable, Notice, StatusBadge, TableWrap } from "../components.tsx"
import { diffOf } from "@acs/domain/ActionDiff"
import { ago, count, dateTime, duration, kindLabel, money, percent } from "../format.ts"
import { useLoad, useNow } from "../hooks.ts"
import { accountOf, type Session } from "../session.ts"
import { HarvestDelivery } from "./HarvestDelivery.tsx"

const SYNC_POLL_MS = 1_000

const WAIT_REASONS: Record<NonNullable<(typeof SyncQueueEntry.Type)["reason"]>, string> = {
  rate_limited: "the platform's rate limit",
  org_at_bound: "the workspace's syncs at once",
  instance_at_bound: "this server's syncs at once",
  after_failure: "a retry after its last sync failed"
}

/** An account's place in the sync queue, in words. */
const queueText = (entry: typeof SyncQueueEntry.Type | undefined, now: number): string => {
  if (entry === undefined) return "—"
  switch (entry.state) {
    case "off":
      return "not scheduled"
    case "running":
      return "syncing"
    case "due":
      return "due, starting"
    case "fresh":
      return entry.dueAt === null ? "fresh" : `fresh, due in ${duration(Math.max(0, Date.parse(entry.dueAt) - now))}`
    case "waiting":
      return `waiting for ${entry.reason === null ? "its turn" : WAIT_REASONS[entry.reason]}${entry.until === null ? "" : ` (until ${dateTime(entry.until)})`}`
  }
}

/**
 * A proposal endpoint of the typed client, by the plan item's kind. The endpoints are one per kind, each
 * typed with its own body; a plan item's body is the kind's body already (Plan.ts), which the compiler cannot
 * relate to a kind chosen at run time, hence the one assertion.
 */
type Propose = (input: {
  readonly path: { readonly projectId: string }
  readonly payload: unknown
  readonly urlParams: { readonly preview?: boolean }
  readonly headers: { readonly "idempotency-key"?: string }
}) => Effect.Effect<ProposalResponse | ProposalPreview, unknown>

const proposeFor = (client: Client, kind: string): Propose => {
  const declared = proposalKinds.find((k) => k.kind === kind)
  if (declared === undefined) throw new Error(`unknown proposal kind ${kind}`)
  return client.proposals[declared.operation] as Propose
}

export const AccountsPage = (props: { readonly session: Session; readonly projectId: string | undefined }) => {
  const { session } = props
  const now = useNow()
  const projectId = props.projectId ?? session.accounts[0]?.projectId
  const account = projectId === undefined ? undefined : accountOf(session, projectId)
  const currency = account?.currency ?? "USD"

  const freshness = useLoad(
    () => Promise.all(session.accounts.map((a) => api((c) => c.accounts.getAccount({ path: { projectId: a.projectId } })))),
    [],
    (e) => e.type.startsWith("sync.")
  )
  // The org's queue: an account-bound session is refused it, and the column then shows nothing.
  const queue = useLoad(() => api((c) => c.warehouse.getSyncQueue({})), [], (e) => e.type.startsWith("sync."))
  const queued = new Map(
    (queue.data !== undefined && Either.isRight(queue.data) ? queue.data.right.accounts : []).map((entry) => [entry.projectId, entry])
  )
  const campaigns = useLoad(async () =>
    projectId === undefined ? undefined : apiOrThrow((c) => c.warehouse.listCampaigns({ path: { projectId }, urlParams: { limit: 10 } })),
    [projectId], (e) => e.type === "sync.succeeded")
  const keywords = useLoad(async () =>
    projectId === undefined ? undefined : apiOrThrow((c) => c.warehouse.listKeywords({ path: { projectId }, urlParams: { limit: 10 } })),
    [projectId], (e) => e.type === "sync.succeeded")
  const plan = useLoad(async () =>
    projectId === undefined ? undefined : apiOrThrow((c) => c.insights.getPlan({ path: { projectId }, urlParams: { limit: 10 } })),
    [projectId], (e) => e.type === "sync.succeeded" || e.type === "action.applied")

  return (
    <section aria-labelledby="accounts-title">
      <h1 id="accounts-title">Accounts</h1>
      <TableWrap label="Accounts and the freshness of their data">
        <table>
          <caption class="visually-hidden">Accounts and the freshness of their data</caption>
          <thead><tr><th scope="col">Account</th><th scope="col">Currency</th><th scope="col">Last sync</th><th scope="col">Coverage</th><th scope="col">Scheduled sync</th><th scope="col">Warnings</th></tr></thead>
          <tbody>
            {session.accounts.map((a, i) => {
              const answer = freshness.data?.[i]
              const f = answer !== undefined && Either.isRight(answer) ? answer.right.dataFreshness : undefined
              return (
                <tr key={a.projectId} aria-current={a.projectId === projectId ? "true" : undefined}>
                  <th scope="row"><a href={`#/accounts/${encodeURIComponent(a.projectId)}`}>{a.name}</a>{a.readOnly && " (read-only)"}</th>
                  <td>{a.currency}</td>
                  <td>{f === undefined ? "…" : ago(f.lastSyncAt, now)}</td>
                  <td>{f?.coverage ?? "…"}</td>
                  <td>{queueText(queued.get(a.projectId), now)}</td>
                  <td>{f?.warning ?? "—"}</td>
                </tr>
              )
            })}
          </tbody>
        </table>
      </TableWrap>
      {projectId !== undefined && account !== undefined && (
        <>
          <div class="filters"><AccountPicker accounts={session.accounts} value={projectId} route="accounts" /></div>
          <SyncPanel session={session} projectId={projectId} onDone={() => freshness.reload()} />
          <section aria-labelledby="campaigns-title">
            <h2 id="campaigns-title">Campaigns, by spend over 30 days</h2>
            <Notice error={campaigns.error} />
            <TableWrap label={`Campaigns of ${account.name}`}>
              <table>
                <caption class="visually-hidden">Campaigns of {account.name}</caption>
                <thead><tr><th scope="col">Campaign</th><th scope="col">Status</th><th scope="col">Daily budget</th><th scope="col">Spend</th><th scope="col">Installs</th><th scope="col">CPA</th><th scope="col">Conversion</th></tr></thead>
                <tbody>
                  {(campaigns.data?.campaigns ?? []).map((c) => (
                    <tr key={c.campaignId}>
                      <th scope="row">{c.name}</th><td>{c.status}</td><td>{money(c.dailyBudgetMicros, currency)}</td><td>{money(c.spendMicros, currency)}</td>
                      <td>{count(c.installs)}</td><td>{money(c.cpaMicros, currency)}</td><td>{percent(c.conversionRate)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          </section>
          <section aria-labelledby="keywords-title">
            <h2 id="keywords-title">Keywords, by spend over 30 days</h2>
            <Notice error={keywords.error} />
            <TableWrap label={`Keywords of ${account.name}`}>
              <table>
                <caption class="visually-hidden">Keywords of {account.name}</caption>
                <thead><tr><th scope="col">Keyword</th><th scope="col">Match</th><th scope="col">Status</th><th scope="col">Bid</th><th scope="col">Spend</th><th scope="col">Installs</th><th scope="col">CPA</th></tr></thead>
                <tbody>
                  {(keywords.data?.keywords ?? []).map((k) => (
                    <tr key={k.keywordId}>
                      <th scope="row">{k.text}</th><td>{k.matchType.toLowerCase()}</td><td>{k.status}</td><td>{money(k.bidMicros, currency)}</td>
                      <td>{money(k.spendMicros, currency)}</td><td>{count(k.installs)}</td><td>{money(k.cpaMicros, currency)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          </section>
          <section aria-labelledby="plan-title">
            <h2 id="plan-title">Plan</h2>
            <Notice error={plan.error} />
            {plan.data !== undefined && plan.data.items.length === 0 && <p class="empty">acs suggests nothing for this account now.</p>}
            <ol class="plan">
              {(plan.data?.items ?? []).map((item) => <PlanEntry key={item.itemId} item={item} projectId={projectId} currency={currency} canPropose={session.me.scope !== "read"} />)}
            </ol>
          </section>
        </>
      )}
    </section>
  )
}

const PlanEntry = (props: { readonly item: PlanItem; readonly projectId: string; readonly currency: string; readonly canPropose: boolean }) => {
  const { item, projectId, currency } = props
  const [preview, setPreview] = useState<ProposalPreview>()
  const [proposed, setProposed] = useState<ProposalResponse>()
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  // One key per item shown: a double click proposes once (the server replays the same answer).
  const [idempotencyKey] = useState(() => `console-${crypto.randomUUID()}`)

  const run = async (dryRun: boolean) => {
    setBusy(true)
    setError(undefined)
    const answer = await api((c) =>
      proposeFor(c, item.proposal.kind)({
        path: { projectId },
        payload: item.proposal.body,
        urlParams: dryRun ? { preview: true } : {},
        headers: dryRun ? {} : { "idempotency-key": idempotencyKey }
      })
    )
    setBusy(false)
    if (Either.isLeft(answer)) return setError(answer.left.message)
    const r = answer.right
    if ("actionId" in r) setProposed(r)
    else setPreview(r)
  }

  const titleId = `plan-${item.itemId}`
  return (
    <li>
      <article class="card" aria-labelledby={titleId}>
        <header class="card-head"><h3 id={titleId}>{item.title}</h3><span class="badge">{kindLabel(item.proposal.kind)}</span></header>
        <p>{item.rationale}</p>
        <p class="muted">At stake: {money(item.impactMicros, currency)} over {item.evidence.windowDays} days · CPA {money(item.evidence.cpaMicros, currency)}</p>
        {preview !== undefined && (
          <div class="preview" role="region" aria-label="Preview">
            <p><strong>Preview:</strong> {preview.summary} — would be {preview.mode === "auto_applied" ? "applied at once" : "queued for approval"} ({preview.riskTier} risk)</p>
            {preview.policyReasons.length > 0 && <ul>{preview.policyReasons.map((r) => <li key={r}>{r}</li>)}</ul>}
            <DiffTable rows={diffOf(preview.kind, preview.payload)} currency={currency} caption="What the proposal would change" />
            <HarvestDelivery payload={preview.payload} currency={currency} />
          </div>
        )}
        <Notice error={error} message={proposed === undefined ? undefined : `Proposed: ${proposed.summary} — ${proposed.status} (${proposed.mode === "queued" ? "waits for approval" : "auto-applied"}).`} />
        {props.canPropose && proposed === undefined && (
          <div class="actions">
            <button type="button" disabled={busy} onClick={() => run(true)}>Preview</button>
            <button type="button" class="primary" disabled={busy || preview === undefined} onClick={() => run(false)}>Propose</button>
          </div>
        )}
      </article>
    </li>
  )
}

/** The latest sync and, while one runs, its progress; admins start one. */
const SyncPanel = (props: { readonly session: Session; readonly projectId: string; readonly onDone: () => void }) => {
  const { projectId } = props
  const now = useNow()
  const [error, setError] = useState<string>()
  const syncs = useLoad(() => apiOrThrow((c) => c.warehouse.listSyncs({ path: { projectId }, urlParams: { limit: 5 } })), [projectId],
    (e) => e.type.startsWith("sync.") && (e.projectId === null || e.projectId === projectId))
  const latest = syncs.data?.syncs[0]
  const running = latest?.status === "running"

  // Progress is not an event: while a sync runs, its record is read every second.
  useEffect(() => {
    if (!running) return undefined
    const timer = setInterval(() => syncs.reload(), SYNC_POLL_MS)
    return () => {
      clearInterval(timer)
      props.onDone()
    }
  }, [running])

  const start = async () => {
    setError(undefined)
    const answer = await api((c) => c.warehouse.startSync({ path: { projectId } }))
    if (Either.isLeft(answer)) setError(answer.left.message)
    syncs.reload()
  }

  const progress = latest?.progress
  return (
    <section aria-labelledby="sync-title">
      <h2 id="sync-title">Sync</h2>
      {latest === undefined ? <p>No sync yet.</p> : (
        <p>
          <StatusBadge status={latest.status} /> {latest.trigger} sync started {ago(latest.startedAt, now)}
          {latest.status === "succeeded" && `, ${count(latest.rowsWritten)} rows`}
          {latest.error !== null && <span class="error-text"> — {latest.error}</span>}
        </p>
      )}
      {running && (
        <div>
          <label for="sync-progress">{progress?.step ?? "Syncing"}</label>{" "}
          <progress id="sync-progress" max={progress?.total ?? 1} value={progress?.total === undefined ? undefined : progress.done ?? 0} />
        </div>
      )}
      <Notice error={error} />
      {props.session.me.scope === "admin" && <button type="button" disabled={running} onClick={start}>{running ? "Syncing…" : "Sync now"}</button>}
    </section>
  )
}
