/**
 * Search terms of one account: what people searched when the ads showed, by spend over 30 days, each with the keyword
 * it matched or Search Match, and Apple's low-volume bucket (terms too rare to name) marked as such; filtered by
 * campaign and ad group, with the data's freshness. The plan's harvest candidates come with their expected effect and
 * are chosen from the start; the person chooses terms, previews the harvest (the share of each source ad group's
 * delivery the negatives remove) and proposes it as one harvest, which then waits for review like any proposal
 * (HarvestPanel.tsx).
 */
import type { AdGroupRow, SearchTermRow } from "@acs/domain/Warehouse"
import { useRef, useState } from "preact/hooks"
import { apiOrThrow } from "../api.ts"
import { AccountPicker, Notice, TableWrap } from "../components.tsx"
import { ago, count, money, percent } from "../format.ts"
import { type ChosenTerm, harvestCandidates, termKey } from "../harvest.ts"
import { useLoad, useNow } from "../hooks.ts"
import { accountOf, type Session } from "../session.ts"
import { HarvestPanel, type Places } from "./HarvestPanel.tsx"

/** The terms the page shows at once, by spend: the ones worth a decision. */
const TERMS_SHOWN = 200
/** Campaigns and ad groups, for names and the filters: the most a read answers. */
const ALL = 1000

const sourceLabel = (row: typeof SearchTermRow.Type): string => {
  const source = row.source
  if (source === null) return "—"
  if (source.type === "searchMatch") return "Search Match"
  return `${source.text ?? `keyword ${source.keywordId}`}${source.matchType === null ? "" : ` (${source.matchType.toLowerCase()})`}`
}

export const SearchTermsPage = (props: { readonly session: Session; readonly projectId: string | undefined }) => {
  const projectId = props.projectId ?? props.session.accounts[0]?.projectId
  const account = projectId === undefined ? undefined : accountOf(props.session, projectId)
  return (
    <section aria-labelledby="search-terms-title">
      <h1 id="search-terms-title">Search terms</h1>
      {projectId === undefined || account === undefined ? <p class="empty">No account to show.</p> : (
        // One account's choice of terms does not carry over to another.
        <AccountSearchTerms key={projectId} session={props.session} projectId={projectId} />
      )}
    </section>
  )
}

const AccountSearchTerms = (props: { readonly session: Session; readonly projectId: string }) => {
  const { session, projectId } = props
  const account = accountOf(session, projectId)!
  const currency = account.currency
  const now = useNow()
  const [filter, setFilter] = useState<{ readonly campaignId: string; readonly adGroupId: string }>({ campaignId: "", adGroupId: "" })
  const [chosen, setChosen] = useState<ReadonlyMap<string, ChosenTerm>>(new Map())
  /** Whether the plan's candidates were chosen yet: once, when the plan first answers. */
  const seeded = useRef(false)

  const places = useLoad<Places>(async () => {
    const [campaigns, adGroups] = await Promise.all([
      apiOrThrow((c) => c.warehouse.listCampaigns({ path: { projectId }, urlParams: { limit: ALL } })),
      apiOrThrow((c) => c.warehouse.listAdGroups({ path: { projectId }, urlParams: { limit: ALL } }))
    ])
    return {
      campaigns: [...campaigns.campaigns].sort((a, b) => a.name.localeCompare(b.name)),
      adGroups: new Map(adGroups.adGroups.map((g) => [g.adGroupId, g] as const))
    }
  }, [projectId], (e) => e.type === "sync.succeeded")
  const terms = useLoad(() =>
    apiOrThrow((c) =>
      c.warehouse.listSearchTerms({
        path: { projectId },
        urlParams: {
          limit: TERMS_SHOWN,
          ...(filter.campaignId === "" ? {} : { campaignId: filter.campaignId }),
          ...(filter.adGroupId === "" ? {} : { adGroupId: filter.adGroupId })
        }
      })
    ), [projectId, filter.campaignId, filter.adGroupId], (e) => e.type === "sync.succeeded")
  const plan = useLoad(async () => {
    const answer = await apiOrThrow((c) => c.insights.getPlan({ path: { projectId }, urlParams: { limit: ALL } }))
    const candidates = harvestCandidates(answer.items)
    if (!seeded.current) {
      seeded.current = true
      setChosen(new Map(candidates.flatMap((c) => c.terms.map((t) => [termKey(t.sourceAdGroupId, t.text), t] as const))))
    }
    return candidates
  }, [projectId], (e) => e.type === "sync.succeeded" || e.type === "action.applied")

  const adGroups = places.data?.adGroups ?? new Map<string, typeof AdGroupRow.Type>()
  const adGroupName = (id: string) => adGroups.get(id)?.name ?? id
  const campaignName = (id: string) => places.data?.campaigns.find((c) => c.campaignId === id)?.name ?? id
  /** Where a term of this ad group goes when chosen from the table: where the plan sends its candidates, else the ad group itself. */
  const targetFor = (sourceAdGroupId: string) =>
    plan.data?.flatMap((c) => c.terms).find((t) => t.sourceAdGroupId === sourceAdGroupId)?.targetAdGroupId ?? sourceAdGroupId
  const inFilter = (adGroupId: string) => {
    const campaignId = adGroups.get(adGroupId)?.campaignId
    return (filter.campaignId === "" || campaignId === filter.campaignId) && (filter.adGroupId === "" || adGroupId === filter.adGroupId)
  }
  const candidateKeys = new Set((plan.data ?? []).flatMap((c) => c.terms.map((t) => termKey(t.sourceAdGroupId, t.text))))

  const choose = (term: ChosenTerm, on: boolean) =>
    setChosen((current) => {
      const next = new Map(current)
      if (on) next.set(termKey(term.sourceAdGroupId, term.text), term)
      else next.delete(termKey(term.sourceAdGroupId, term.text))
      return next
    })
  const canPropose = session.me.scope !== "read" && !account.readOnly
  const freshness = terms.data?.dataFreshness
  const campaignAdGroups = [...adGroups.values()].filter((g) => g.campaignId === filter.campaignId).sort((a, b) => a.name.localeCompare(b.name))
  const shownCandidates = (plan.data ?? []).filter((c) => c.terms.some((t) => inFilter(t.sourceAdGroupId)))

  return (
    <>
      <div class="filters" role="group" aria-label="Filters">
        <AccountPicker accounts={session.accounts} value={projectId} route="search-terms" />
        <label class="field"><span>Campaign</span>
          <select value={filter.campaignId} onChange={(e) => setFilter({ campaignId: e.currentTarget.value, adGroupId: "" })}>
            <option value="">all campaigns</option>
            {(places.data?.campaigns ?? []).map((c) => <option key={c.campaignId} value={c.campaignId}>{c.name}</option>)}
          </select>
        </label>
        <label class="field"><span>Ad group</span>
          <select value={filter.adGroupId} disabled={filter.campaignId === ""} onChange={(e) => setFilter({ ...filter, adGroupId: e.currentTarget.value })}>
            <option value="">all ad groups</option>
            {campaignAdGroups.map((g) => <option key={g.adGroupId} value={g.adGroupId}>{g.name}</option>)}
          </select>
        </label>
      </div>
      {freshness !== undefined && (
        <p class="muted freshness">
          Data synced {ago(freshness.lastSyncAt, now)} · {freshness.coverage}
          {freshness.warning !== undefined && <span class="error-text"> — {freshness.warning}</span>}
        </p>
      )}
      <Notice error={places.error ?? plan.error} />

      <section aria-labelledby="candidates-title">
        <h2 id="candidates-title">Harvest candidates</h2>
        <p class="muted">
          Converting search terms that are not keywords yet, from the plan: chosen to harvest from the start. Each becomes an
          EXACT keyword with its own bid and is negated where it came from, so the two do not compete.
        </p>
        {plan.data !== undefined && shownCandidates.length === 0 && <p class="empty">No search term is a harvest candidate here now.</p>}
        <ol class="plan">
          {shownCandidates.map(({ item, terms: candidateTerms }) => {
            const titleId = `candidate-${item.itemId}`
            const effect = item.evidence.expectedEffect
            return (
              <li key={item.itemId}>
                <article class="card candidate" aria-labelledby={titleId} data-item-id={item.itemId}>
                  <header class="card-head"><h3 id={titleId}>{item.title}</h3></header>
                  <p>{item.rationale}</p>
                  {effect !== undefined && <p class="effect"><strong>Expected effect:</strong> {effect.summary}</p>}
                  <TableWrap label={`Terms of: ${item.title}`}>
                    <table>
                      <caption class="visually-hidden">Terms of: {item.title}</caption>
                      <thead><tr><th scope="col">Harvest</th><th scope="col">Term</th><th scope="col">Into</th><th scope="col">Spend</th><th scope="col">Installs</th><th scope="col">CPA</th></tr></thead>
                      <tbody>
                        {candidateTerms.map((t) => {
                          const spent = item.evidence.items?.find((i) => i.text === t.text)
                          const key = termKey(t.sourceAdGroupId, t.text)
                          return (
                            <tr key={key}>
                              <td>
                                <input type="checkbox" checked={chosen.has(key)} disabled={!canPropose} onChange={(e) => choose(t, e.currentTarget.checked)}
                                  aria-label={`Harvest “${t.text}” from ${adGroupName(t.sourceAdGroupId)}`} />
                              </td>
                              <th scope="row">{t.text}</th>
                              <td>{adGroupName(t.targetAdGroupId)}{t.bidMicros === undefined || t.bidMicros === null ? "" : ` at ${money(t.bidMicros, currency)}`}</td>
                              <td>{money(spent?.spendMicros, currency)}</td>
                              <td>{count(spent?.installs)}</td>
                              <td>{money(spent === undefined || spent.installs === 0 ? null : Math.round(spent.spendMicros / spent.installs), currency)}</td>
                            </tr>
                          )
                        })}
                      </tbody>
                    </table>
                  </TableWrap>
                </article>
              </li>
            )
          })}
        </ol>
      </section>

      <section aria-labelledby="terms-title">
        <h2 id="terms-title">Search terms, by spend over 30 days</h2>
        <Notice error={terms.error} />
        {terms.data !== undefined && (
          <p class="muted">
            {terms.data.truncated ? `The ${count(terms.data.searchTerms.length)} with the most spend of ${count(terms.data.total)}.` : `${count(terms.data.total)} rows.`}
            {" "}A low-volume row is Apple's sum of an ad group's terms too rare to name: it carries spend but cannot be harvested.
          </p>
        )}
        {canPropose && (
          // The table is long and the harvest below it: what is chosen stays in view, one click from the harvest.
          <div class="bulk" role="group" aria-label="Chosen terms">
            <span>{chosen.size} term{chosen.size === 1 ? "" : "s"} chosen to harvest</span>
            <button type="button" onClick={() => {
              const heading = document.getElementById("harvest-title")
              heading?.scrollIntoView({ block: "start" })
              heading?.focus()
            }}>Go to the harvest</button>
          </div>
        )}
        <TableWrap label={`Search terms of ${account.name}`}>
          <table class="search-terms">
            <caption class="visually-hidden">Search terms of {account.name}</caption>
            <thead>
              <tr>
                <th scope="col">Harvest</th><th scope="col">Search term</th><th scope="col">Source</th><th scope="col">Ad group</th>
                <th scope="col">Spend</th><th scope="col">Taps</th><th scope="col">Installs</th><th scope="col">CPA</th><th scope="col">Conversion</th>
              </tr>
            </thead>
            <tbody>
              {(terms.data?.searchTerms ?? []).map((row) => {
                const text = row.text
                const key = text === null ? null : termKey(row.adGroupId, text)
                return (
                  <tr key={`${row.adGroupId}|${row.keywordId ?? ""}|${text ?? ""}|${String(row.lowVolume)}`} class={row.lowVolume ? "low-volume" : undefined}>
                    <td>
                      {text === null || key === null ? "—" : (
                        <input type="checkbox" checked={chosen.has(key)} disabled={!canPropose}
                          onChange={(e) => choose({ text, sourceAdGroupId: row.adGroupId, targetAdGroupId: targetFor(row.adGroupId) }, e.currentTarget.checked)}
                          aria-label={`Harvest “${text}” from ${adGroupName(row.adGroupId)}`} />
                      )}
                    </td>
                    <th scope="row">
                      {text === null ? <span class="badge low-volume">low-volume</span> : text}
                      {key !== null && candidateKeys.has(key) && <> <span class="badge candidate">candidate</span></>}
                    </th>
                    <td>{sourceLabel(row)}</td>
                    <td>{adGroupName(row.adGroupId)} <span class="muted">({campaignName(row.campaignId)})</span></td>
                    <td>{money(row.spendMicros, currency)}</td><td>{count(row.taps)}</td><td>{count(row.installs)}</td>
                    <td>{money(row.cpaMicros, currency)}</td><td>{percent(row.conversionRate)}</td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </TableWrap>
      </section>

      {canPropose && places.data !== undefined && (
        <HarvestPanel projectId={projectId} currency={currency} places={places.data} chosen={chosen}
          onChoose={choose} onClear={() => setChosen(new Map())} />
      )}
    </>
  )
}
