/**
 * The harvest of the chosen search terms (docs/contract.md 2.1.1): each term with the ad group it
 * came from and the one its EXACT keyword goes into (changeable), whether they are negated at their sources, and why.
 * Preview first (`?preview=true`: the share of each source ad group's 30-day spend, taps and installs the negatives
 * remove, or the refusal, a guardrail's included), then Harvest proposes exactly what was previewed as one harvest,
 * which waits for review in the ledger like any proposal.
 */
import type { ProposalPreview, ProposalResponse } from "@acs/domain/Actions"
import type { AdGroupRow, CampaignRow } from "@acs/domain/Warehouse"
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { Notice, TableWrap } from "../components.tsx"
import { money } from "../format.ts"
import { type ChosenTerm, negatesAtSource, termKey } from "../harvest.ts"
import { HarvestDelivery } from "./HarvestDelivery.tsx"

/** The account's campaigns and ad groups: names, and where a keyword may go. */
export interface Places {
  readonly campaigns: ReadonlyArray<typeof CampaignRow.Type>
  readonly adGroups: ReadonlyMap<string, typeof AdGroupRow.Type>
}

const DEFAULT_REASON = "Harvest converting search terms as EXACT keywords"

const Preview = (props: { readonly preview: ProposalPreview; readonly currency: string }) => {
  const { preview } = props
  return (
    <div class="preview" role="region" aria-label="Harvest preview">
      <p><strong>Preview:</strong> {preview.summary}</p>
      <p>It would be {preview.mode === "auto_applied" ? "applied at once" : "queued for review"} ({preview.riskTier} risk).</p>
      {preview.policyReasons.length > 0 && <ul>{preview.policyReasons.map((r) => <li key={r}>{r}</li>)}</ul>}
      <HarvestDelivery payload={preview.payload} currency={props.currency} />
    </div>
  )
}

export const HarvestPanel = (props: {
  readonly projectId: string
  readonly currency: string
  readonly places: Places
  readonly chosen: ReadonlyMap<string, ChosenTerm>
  readonly onChoose: (term: ChosenTerm, on: boolean) => void
  readonly onClear: () => void
}) => {
  const { projectId, currency, places, chosen } = props
  /** null: negated exactly when no term goes into the ad group it came from. */
  const [negate, setNegate] = useState<boolean | null>(null)
  const [reason, setReason] = useState(DEFAULT_REASON)
  const [preview, setPreview] = useState<{ readonly request: string; readonly answer: ProposalPreview }>()
  const [proposed, setProposed] = useState<ProposalResponse>()
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  // One key per harvest: a double click proposes once (the server replays the same answer).
  const [idempotencyKey, setIdempotencyKey] = useState(() => `console-${crypto.randomUUID()}`)

  const terms = [...chosen.values()]
  const negateAtSource = negate ?? negatesAtSource(terms)
  const payload = {
    terms: terms.map((t) => ({
      text: t.text,
      sourceAdGroupId: t.sourceAdGroupId,
      targetAdGroupId: t.targetAdGroupId,
      ...(t.bidMicros === undefined || t.bidMicros === null ? {} : { bidMicros: t.bidMicros })
    })),
    negateAtSource,
    reason
  }
  const request = JSON.stringify(payload)
  const previewed = preview !== undefined && preview.request === request ? preview.answer : undefined

  const run = async (dryRun: boolean) => {
    setBusy(true)
    setError(undefined)
    const answer = await api((c) =>
      c.proposals.proposeHarvestSearchTerms({
        path: { projectId },
        payload,
        urlParams: dryRun ? { preview: true } : {},
        headers: dryRun ? {} : { "idempotency-key": idempotencyKey }
      })
    )
    setBusy(false)
    if (Either.isLeft(answer)) {
      setPreview(undefined)
      return setError(answer.left.message)
    }
    const r = answer.right
    if (!("actionId" in r)) return setPreview({ request, answer: r })
    setProposed(r)
    setPreview(undefined)
    setNegate(null)
    setIdempotencyKey(`console-${crypto.randomUUID()}`)
    props.onClear()
  }

  const adGroupName = (id: string) => places.adGroups.get(id)?.name ?? id
  const byCampaign = places.campaigns.map((c) => ({
    campaign: c,
    adGroups: [...places.adGroups.values()].filter((g) => g.campaignId === c.campaignId).sort((a, b) => a.name.localeCompare(b.name))
  })).filter((c) => c.adGroups.length > 0)

  return (
    <section aria-labelledby="harvest-title" class="card harvest">
      <h2 id="harvest-title" tabIndex={-1}>Harvest</h2>
      <Notice error={error} />
      {proposed !== undefined && (
        <p class="notice ok" role="status">
          Proposed: {proposed.summary} — {proposed.mode === "queued" ? "queued for review" : proposed.status}.{" "}
          <a href={`#/ledger/${encodeURIComponent(projectId)}`}>See it in the ledger</a>
        </p>
      )}
      {terms.length === 0 ? <p class="muted">No term chosen: tick the terms to harvest above.</p> : (
        <>
          <p>{terms.length} term{terms.length === 1 ? "" : "s"} chosen.</p>
          <TableWrap label="The terms to harvest">
            <table>
              <caption class="visually-hidden">The terms to harvest</caption>
              <thead><tr><th scope="col">Term</th><th scope="col">From</th><th scope="col">Into</th><th scope="col">Bid</th><th scope="col"><span class="visually-hidden">Leave out</span></th></tr></thead>
              <tbody>
                {terms.map((t) => (
                  <tr key={termKey(t.sourceAdGroupId, t.text)}>
                    <th scope="row">{t.text}</th>
                    <td>{adGroupName(t.sourceAdGroupId)}</td>
                    <td>
                      <select value={t.targetAdGroupId} aria-label={`Ad group “${t.text}” goes into`}
                        onChange={(e) => props.onChoose({ ...t, targetAdGroupId: e.currentTarget.value }, true)}>
                        {byCampaign.map(({ campaign, adGroups }) => (
                          <optgroup key={campaign.campaignId} label={campaign.name}>
                            {adGroups.map((g) => <option key={g.adGroupId} value={g.adGroupId}>{g.name}{g.status === "ENABLED" ? "" : ` (${g.status.toLowerCase()})`}</option>)}
                          </optgroup>
                        ))}
                      </select>
                    </td>
                    <td>{t.bidMicros === undefined || t.bidMicros === null ? "ad group default" : money(t.bidMicros, currency)}</td>
                    <td><button type="button" onClick={() => props.onChoose(t, false)} aria-label={`Leave out “${t.text}”`}>Leave out</button></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <label class="check">
            <input type="checkbox" checked={negateAtSource} onChange={(e) => setNegate(e.currentTarget.checked)} />
            Negate each term (EXACT) in the ad group it came from, once its keyword exists
          </label>
          <label class="field"><span>Reason (reviewers see it)</span>
            <input type="text" value={reason} maxLength={2000} required onInput={(e) => setReason(e.currentTarget.value)} />
          </label>
          {previewed !== undefined && <Preview preview={previewed} currency={currency} />}
          <div class="actions">
            <button type="button" disabled={busy || reason.trim() === ""} onClick={() => run(true)}>Preview</button>
            <button type="button" class="primary" disabled={busy || previewed === undefined} onClick={() => run(false)}>Harvest</button>
            <button type="button" disabled={busy} onClick={props.onClear}>Clear the choice</button>
            {previewed === undefined && <span class="muted">Preview the harvest to propose it.</span>}
          </div>
        </>
      )}
    </section>
  )
}
