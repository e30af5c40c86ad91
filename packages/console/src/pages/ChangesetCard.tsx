/**
 * A queued changeset as one card of the approvals page: its title, opener and reason, what the whole changes
 * (the daily-budget change in the account's currency, members by kind and by campaign), the policy's reasons,
 * and its members by campaign and ad group, each member's diff behind a disclosure. Approve names the plan hash
 * the card shows; a refusal because the account moved under the plan names the members that moved.
 */
import type { ActionRecord } from "@acs/domain/Actions"
import type { Changeset } from "@acs/domain/Changesets"
import type { CallerMay } from "@acs/domain/FourEyes"
import type { ApiFailure } from "../api.ts"
import { byCampaignAndAdGroup, signedMoney } from "../changesets.ts"
import { DiffTable, TableWrap } from "../components.tsx"
import { diffOf } from "@acs/domain/ActionDiff"
import { ago, count, dateTime, duration, kindLabel } from "../format.ts"
import { actorLabel } from "../session.ts"

export interface QueuedChangeset {
  readonly changeset: Changeset
  readonly members: ReadonlyArray<ActionRecord>
  readonly may: CallerMay
}

/** The server's reason as a sentence: capitalised, with a full stop. */
const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}.`

/** A plan hash as people compare it: its first 12 hex digits (the full hash in the title). */
export const shortHash = (planHash: string) => planHash.replace(/^sha256:/, "").slice(0, 12)

const campaignLabel = (names: ReadonlyMap<string, string>, campaignId: string | null) =>
  campaignId === null ? "New campaigns" : `Campaign ${names.get(campaignId) ?? campaignId}`

/** Why an approval was refused: the members that moved in plain words, or the server's message. */
const Refusal = (props: { readonly failure: ApiFailure; readonly members: ReadonlyArray<ActionRecord> }) => {
  const { failure } = props
  if (failure.reason !== "state_changed_since_proposal") {
    return <p class="notice error" role="alert">Not approved: {failure.message}</p>
  }
  const summaryOf = (actionId: string) => props.members.find((m) => m.actionId === actionId)?.summary ?? actionId
  return (
    <div class="notice error" role="alert">
      <p>
        Not approved: the account changed since this changeset was proposed, so its plan no longer matches what is
        live. The opener must submit it again before anyone can approve it.
      </p>
      <p>What moved:</p>
      <ul class="moved">
        {(failure.moved ?? []).map((m) => <li key={m.actionId} data-action-id={m.actionId}><strong>{summaryOf(m.actionId)}</strong>: {m.why}</li>)}
      </ul>
    </div>
  )
}

export const ChangesetCard = (props: {
  readonly queued: QueuedChangeset
  readonly accountName: string
  readonly currency: string
  readonly campaignNames: ReadonlyMap<string, string>
  readonly ttlHours: number
  readonly now: number
  readonly busy: boolean
  readonly failure: ApiFailure | undefined
  readonly onApprove: () => void
  readonly onReject: () => void
}) => {
  const { changeset, members, may } = props.queued
  const { currency } = props
  const impact = changeset.impact
  const titleId = `title-${changeset.changesetId}`
  const submittedAt = changeset.submittedAt ?? changeset.createdAt
  const expiresAt = Date.parse(submittedAt) + props.ttlHours * 3_600_000
  const groups = byCampaignAndAdGroup(members)
  return (
    <article class="card changeset" aria-labelledby={titleId} data-changeset-id={changeset.changesetId}>
      <header class="card-head">
        <h2 id={titleId}>{changeset.title}</h2>
        <span class="badge origin">changeset of {count(changeset.members.total)}</span>
        {changeset.decision !== null && <span class={`badge risk-${changeset.decision.riskTier}`}>{changeset.decision.riskTier} risk</span>}
      </header>
      <dl class="meta">
        <div><dt>Account</dt><dd>{props.accountName}</dd></div>
        <div><dt>Opened by</dt><dd>{actorLabel(changeset.openedBy)}</dd></div>
        <div><dt>Submitted</dt><dd title={dateTime(submittedAt)}>{ago(submittedAt, props.now)}</dd></div>
        <div><dt>Expires</dt><dd title={dateTime(new Date(expiresAt).toISOString())}>
          {expiresAt > props.now ? `in ${duration(expiresAt - props.now)}` : "now"}
        </dd></div>
      </dl>
      {changeset.reason !== null && <p class="reason"><strong>Why:</strong> {changeset.reason}</p>}
      {impact !== null && (
        <section class="impact" aria-label={`Impact of ${changeset.title}`}>
          <h3>Impact</h3>
          <p>Daily budget: <strong class="budget-delta">{signedMoney(impact.dailyBudgetDeltaMicros, currency)}</strong> a day</p>
          <ul class="by-kind">
            {Object.entries(impact.byKind).map(([kind, n]) => <li key={kind}>{count(n)} × {kindLabel(kind)}</li>)}
          </ul>
          <TableWrap label={`Impact of ${changeset.title} by campaign`}>
            <table>
              <caption class="visually-hidden">Impact by campaign</caption>
              <thead><tr><th scope="col">Campaign</th><th scope="col">Members</th><th scope="col">Daily budget</th></tr></thead>
              <tbody>
                {impact.byCampaign.map((c) => (
                  <tr key={c.campaignId ?? "new"}>
                    <th scope="row">{c.campaignId === null ? "new campaigns" : props.campaignNames.get(c.campaignId) ?? c.campaignId}</th>
                    <td>{count(c.members)}</td>
                    <td>{signedMoney(c.dailyBudgetDeltaMicros, currency)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        </section>
      )}
      {changeset.decision !== null && changeset.decision.policyReasons.length > 0 && (
        <div class="reasons">
          <h3>Why it needs a human</h3>
          <ul>{changeset.decision.policyReasons.map((r) => <li key={r}>{r}</li>)}</ul>
        </div>
      )}
      <section class="members" aria-label={`Members of ${changeset.title}`}>
        <h3>Members ({count(members.length)})</h3>
        {groups.map((campaign) => (
          <div key={campaign.campaignId ?? "new"} class="member-group">
            <h4>{campaignLabel(props.campaignNames, campaign.campaignId)}</h4>
            {campaign.adGroups.map((adGroup) => (
              <div key={adGroup.adGroupId ?? "campaign"}>
                {adGroup.adGroupId !== null && <h5>Ad group {adGroup.adGroupId}</h5>}
                <ul class="member-list">
                  {adGroup.members.map((member) => (
                    <li key={member.actionId} data-action-id={member.actionId}>
                      <details>
                        <summary>{member.summary}</summary>
                        {member.reason !== "" && <p class="muted">{member.reason}</p>}
                        <DiffTable rows={diffOf(member.kind, member.payload)} currency={currency} caption={`Change proposed by ${member.summary}`} />
                      </details>
                    </li>
                  ))}
                </ul>
              </div>
            ))}
          </div>
        ))}
      </section>
      {changeset.planHash !== null && (
        <p class="muted plan-hash">
          Plan <code title={changeset.planHash}>{shortHash(changeset.planHash)}</code>: approving approves exactly this plan.
        </p>
      )}
      {changeset.approvals.length > 0 && (
        <p class="second" role="note">
          Approved by {changeset.approvals.map((a) => `${actorLabel(a.by)} (${ago(a.at, props.now)})`).join(", ")}: a high-risk
          changeset needs a second person to approve it.
        </p>
      )}
      {may.yours && <p class={may.approve ? "yours" : "own"} role="note">{sentence(may.reason)}</p>}
      {!may.yours && !may.approve && may.reject && <p class="own" role="note">{sentence(may.reason)}</p>}
      {props.failure !== undefined && <Refusal failure={props.failure} members={members} />}
      {may.reject && (
        <div class="actions">
          {may.approve && (
            <button type="button" class="primary" disabled={props.busy || changeset.planHash === null} onClick={props.onApprove}>
              Approve changeset
            </button>
          )}
          <button type="button" disabled={props.busy} onClick={props.onReject}>{may.yours && !may.approve ? "Withdraw…" : "Reject…"}</button>
        </div>
      )}
    </article>
  )
}
