/**
 * harvest_search_terms (docs/contract.md 2.1, docs/decisions/pipeline.md): search terms become EXACT keywords in
 * their target ad groups and, once a term's keyword exists, EXACT negatives in the ad groups they came from, so the
 * two do not compete. One action, one decision: step 1 creates every keyword in bulk, step 2 negates only the terms
 * whose keyword exists (a failed add skips its negative), each term's outcome in the warnings and ids. Validated
 * against the warehouse; its payload records the share of each source ad group's 30-day delivery the negatives
 * remove (the preview states it), refused past the guardrail `maxDeliveryShareRemovedPct`. Always reviewed; the
 * inverse removes both halves.
 */
import { BidStrategyConflict, NotFound } from "@acs/domain/Errors"
import { harvestSearchTerms as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamAdGroup, UpstreamCampaign, UpstreamKeyword, UpstreamNegativeKeyword } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { createPlaced } from "./PlacedCreates.ts"
import { defineKind, type Step, StepRefused } from "./Kind.ts"
import { decodeBody, holds, money, requireNone } from "./KindSupport.ts"
import { groupBy, keywordKey, listed, MAX_KEYWORDS_PER_AD_GROUP, plural, upstreamNegatives } from "./KeywordSupport.ts"
import type { UnharvestSearchTermsPayload } from "./UnharvestSearchTerms.ts"
import type { DeliveryTotals, WarehouseView } from "./WarehouseView.ts"

const Term = Schema.Struct({
  text: Schema.String,
  sourceCampaignId: Schema.String,
  sourceCampaignName: Schema.String,
  sourceAdGroupId: Schema.String,
  sourceAdGroupName: Schema.String,
  targetCampaignId: Schema.String,
  targetAdGroupId: Schema.String,
  targetAdGroupName: Schema.String,
  /** null: the target ad group's default bid applies. */
  bidMicros: Schema.NullOr(Schema.Int)
})
type Term = typeof Term.Type

const Totals = Schema.Struct({ spendMicros: Schema.Int, taps: Schema.Int, installs: Schema.Int })

/** A source ad group's delivery before the harvest, and the part of it its negated terms carried. */
const Delivery = Schema.Struct({
  campaignId: Schema.String,
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  total: Totals,
  removed: Totals,
  /** Percentages of `total`, two decimals. */
  removedPct: Schema.Struct({ spend: Schema.Number, taps: Schema.Number, installs: Schema.Number })
})

export const HarvestSearchTermsPayload = Schema.Struct({
  currency: Schema.String,
  negateAtSource: Schema.Boolean,
  terms: Schema.Array(Term),
  /** The source ad groups' delivery over the window (30 complete days ending the day before the proposal). */
  priorDelivery: Schema.Struct({ start: Schema.String, end: Schema.String, adGroups: Schema.Array(Delivery) })
})
type Payload = typeof HarvestSearchTermsPayload.Type

/** Where `apply` records term `index`'s new keyword and new negative (absent when that half was not made). */
export const harvestKeywordIdKey = (index: number): string => `keywordId:${index}`
export const harvestNegativeIdKey = (index: number): string => `negativeKeywordId:${index}`

const decode = decodeBody(declaration.body)

const term = (t: { readonly text: string }) => `"${t.text}"`

const pct = (part: number, whole: number): number => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 100)

const summary = (p: Payload) => {
  const targets = new Set(p.terms.map((t) => t.targetAdGroupId)).size
  const head = `Harvest ${plural(p.terms.length, "search term")} as EXACT keywords in ${plural(targets, "ad group")}: ${
    listed(p.terms.map((t) => `${term(t)} into "${t.targetAdGroupName}"${t.bidMicros === null ? "" : ` at ${money(t.bidMicros, p.currency)}`}`))
  }`
  if (!p.negateAtSource) return `${head}; not negated at their sources`
  const shares = p.priorDelivery.adGroups.map((d) =>
    `"${d.adGroupName}" ${d.removedPct.spend}% of spend, ${d.removedPct.taps}% of taps, ${d.removedPct.installs}% of installs`
  )
  return `${head}; each negated (EXACT) where it came from, removing over the last 30 days: ${listed(shares)}`
}

interface Place {
  readonly adGroup: UpstreamAdGroup
  readonly campaign: UpstreamCampaign
}

/** Every ad group the request names, with its campaign; 404 listing those the warehouse does not hold. */
const placesOf = (view: WarehouseView, adGroupIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const places = new Map<string, Place>()
    const missing: Array<string> = []
    for (const id of new Set(adGroupIds)) {
      const adGroup = yield* view.adGroup(id)
      const campaign = adGroup === undefined ? undefined : yield* view.campaign(adGroup.campaignId)
      if (adGroup === undefined || campaign === undefined) missing.push(id)
      else places.set(id, { adGroup, campaign })
    }
    if (missing.length > 0) {
      return yield* new NotFound({ message: `no ${missing.length === 1 ? "ad group" : "ad groups"} ${missing.join(", ")} in this account` })
    }
    return places
  })

/** Bids only where the target's campaign takes them (a MAX_CONVERSIONS campaign's keywords take none). */
const requireBidsFit = (terms: ReadonlyArray<Term>, places: ReadonlyMap<string, Place>) => {
  const refused = terms.filter((t) => t.bidMicros !== null && places.get(t.targetAdGroupId)?.campaign.bidStrategy === "MAX_CONVERSIONS")
  return refused.length === 0 ? Effect.void : Effect.fail(
    new BidStrategyConflict({
      message: `the campaigns of the target ad groups of ${listed(refused.map(term))} bid with MAX_CONVERSIONS, so their keywords take ` +
        "no bid; leave bidMicros out for them"
    })
  )
}

const EXACT = "EXACT" as const

/** Why the harvest does not fit the account as the warehouse holds it: every reason at once. */
const misfits = (view: WarehouseView, p: Payload, places: ReadonlyMap<string, Place>) =>
  Effect.gen(function*() {
    const reasons: Array<string> = []
    const adGroupIds = [...places.keys()]
    const keywords = new Map<string, ReadonlyArray<UpstreamKeyword>>()
    const negatives = new Map<string, ReadonlyArray<UpstreamNegativeKeyword>>()
    for (const id of adGroupIds) {
      const place = places.get(id)!
      keywords.set(id, yield* view.keywordsOf(id))
      negatives.set(id, [...yield* view.negativesOf(place.campaign.campaignId, id), ...yield* view.negativesOf(place.campaign.campaignId, null)])
    }
    const exact = (list: ReadonlyArray<{ readonly text: string; readonly matchType: string }> | undefined) =>
      new Set((list ?? []).filter((k) => k.matchType === EXACT).map((k) => keywordKey(k.text, k.matchType)))
    const keyOf = (t: Term) => keywordKey(t.text, EXACT)
    for (const [, same] of groupBy(p.terms, (t) => `${t.targetAdGroupId}|${keyOf(t)}`)) {
      if (same.length > 1) reasons.push(`${term(same[0]!)} is harvested into ad group "${same[0]!.targetAdGroupName}" ${same.length} times in the request`)
    }
    if (p.negateAtSource) {
      for (const [, same] of groupBy(p.terms, (t) => `${t.sourceAdGroupId}|${keyOf(t)}`)) {
        if (same.length > 1) reasons.push(`${term(same[0]!)} is negated in ad group "${same[0]!.sourceAdGroupName}" ${same.length} times in the request`)
      }
    }
    for (const t of p.terms) {
      if (exact(keywords.get(t.targetAdGroupId)).has(keyOf(t))) {
        reasons.push(`${term(t)} is already an EXACT keyword of ad group "${t.targetAdGroupName}"`)
      }
      if (exact(negatives.get(t.targetAdGroupId)).has(keyOf(t))) {
        reasons.push(`${term(t)} is an EXACT negative keyword of ad group "${t.targetAdGroupName}" (or its campaign), which would block the new keyword`)
      }
      if (!p.negateAtSource) continue
      if (t.sourceAdGroupId === t.targetAdGroupId) {
        reasons.push(`${term(t)} comes from ad group "${t.sourceAdGroupName}", its target: a negative there would block the new keyword`)
      } else if (exact(negatives.get(t.sourceAdGroupId)).has(keyOf(t))) {
        reasons.push(`${term(t)} is already an EXACT negative keyword of ad group "${t.sourceAdGroupName}" (or its campaign)`)
      }
    }
    // The platform's limit counts an ad group's targeting keywords with its negatives.
    for (const id of adGroupIds) {
      const adding = p.terms.filter((t) => t.targetAdGroupId === id).length +
        (p.negateAtSource ? p.terms.filter((t) => t.sourceAdGroupId === id).length : 0)
      if (adding === 0) continue
      const held = (keywords.get(id)?.length ?? 0) + (negatives.get(id)?.filter((n) => n.adGroupId === id).length ?? 0)
      if (held + adding > MAX_KEYWORDS_PER_AD_GROUP) {
        reasons.push(`ad group "${places.get(id)!.adGroup.name}" would hold ${held + adding} keywords and negative keywords (it holds ${held}); ` +
          `the platform allows at most ${MAX_KEYWORDS_PER_AD_GROUP}`)
      }
    }
    return reasons
  })

/** The source ad groups' 30-day delivery and the part the negated terms carry there. */
const deliveryOf = (view: WarehouseView, p: Omit<Payload, "priorDelivery">, places: ReadonlyMap<string, Place>) =>
  Effect.gen(function*() {
    if (!p.negateAtSource) {
      const window = yield* view.searchTermDelivery([])
      return { start: window.start, end: window.end, adGroups: [] }
    }
    const read = yield* view.searchTermDelivery(p.terms.map((t) => ({ adGroupId: t.sourceAdGroupId, text: t.text })))
    const shares = (removed: DeliveryTotals, total: DeliveryTotals) => ({
      spend: pct(removed.spendMicros, total.spendMicros),
      taps: pct(removed.taps, total.taps),
      installs: pct(removed.installs, total.installs)
    })
    return {
      start: read.start,
      end: read.end,
      adGroups: read.adGroups.map((d) => {
        const place = places.get(d.adGroupId)!
        return {
          campaignId: place.campaign.campaignId,
          adGroupId: d.adGroupId,
          adGroupName: place.adGroup.name,
          total: d.total,
          removed: d.removed,
          removedPct: shares(d.removed, d.total)
        }
      })
    }
  })

/** The guardrail: no source ad group loses more than `maxDeliveryShareRemovedPct` of its spend (compared exactly, in micros). */
const guardrailReasons = (p: Payload, maxPct: number, currency: string): Array<string> =>
  p.priorDelivery.adGroups
    .filter((d) => d.removed.spendMicros * 100 > maxPct * d.total.spendMicros)
    .map((d) =>
      `the negatives would remove ${d.removedPct.spend}% of the spend of ad group "${d.adGroupName}" over the last 30 days ` +
      `(${money(d.removed.spendMicros, currency)} of ${money(d.total.spendMicros, currency)}), more than the guardrail ` +
      `maxDeliveryShareRemovedPct allows (${maxPct}%)`
    )

const placedTerms = (p: Payload) => p.terms.map((t, index) => ({ t, index }))

/** Step 1: every term's keyword, in bulk (v1: one call spans the ad groups; v5: one per ad group). */
const keywordsStep = (p: Payload): Step => ({
  name: "create keywords",
  apply: (context) =>
    Effect.gen(function*() {
      const targets = [...groupBy(p.terms, (t) => t.targetAdGroupId).values()].map((same) => same[0]!)
      const lists = yield* Effect.forEach(targets, (t) => context.client.keywords(context.accountId, t.targetCampaignId, t.targetAdGroupId), {
        concurrency: 4
      })
      // A keyword already there is this action's own from a run whose outcome was not recorded: taken, not made twice.
      const there = new Map(lists.flat().map((k) => [`${k.adGroupId}|${keywordKey(k.text, k.matchType)}`, k]))
      const taken = (t: Term) => there.get(`${t.targetAdGroupId}|${keywordKey(t.text, EXACT)}`)
      const pending = placedTerms(p).filter(({ t }) => taken(t) === undefined)
      const sent = yield* createPlaced(
        pending.map(({ t }) => ({ campaignId: t.targetCampaignId, adGroupId: t.targetAdGroupId, text: t.text, matchType: EXACT, bidMicros: t.bidMicros })),
        context.client.createKeywordsAcross === undefined ? undefined : (rows) => context.client.createKeywordsAcross!(context.accountId, rows),
        (campaignId, adGroupId, rows) => context.client.createKeywords(context.accountId, campaignId, adGroupId, rows)
      )
      const outcomeOf = new Map(pending.map((row, k) => [row.index, sent[k]!]))
      const made: Array<readonly [number, UpstreamKeyword]> = []
      const warnings: Array<string> = []
      for (const { t, index } of placedTerms(p)) {
        const kept = taken(t)
        const outcome = outcomeOf.get(index)
        if (kept !== undefined) made.push([index, kept])
        else if (outcome !== undefined && "value" in outcome) made.push([index, outcome.value])
        else {
          warnings.push(`term ${term(t)}: its keyword was not added to ad group "${t.targetAdGroupName}": ${outcome?.messages.join("; ") ?? "no answer"}` +
            (p.negateAtSource ? `; so it is not negated in ad group "${t.sourceAdGroupName}"` : ""))
        }
      }
      if (made.length === 0) return yield* new StepRefused({ message: `every keyword add failed: ${warnings.join("; ")}` })
      return {
        ids: Object.fromEntries(made.map(([index, k]) => [harvestKeywordIdKey(index), k.keywordId])),
        touched: { keywords: made.map(([, k]) => k) },
        warnings
      }
    }),
  // The negatives' call failed as a whole: the keywords go too, so a failed harvest leaves nothing behind.
  undo: (context) =>
    Effect.gen(function*() {
      const created = placedTerms(p).flatMap(({ t, index }) => {
        const keywordId = context.ids[harvestKeywordIdKey(index)]
        return typeof keywordId === "string" ? [{ ...t, keywordId }] : []
      })
      for (const same of groupBy(created, (t) => t.targetAdGroupId).values()) {
        yield* context.client.deleteKeywords(context.accountId, same[0]!.targetCampaignId, same[0]!.targetAdGroupId, same.map((t) => t.keywordId))
      }
      return { removedKeywords: created.map((t) => t.keywordId) }
    })
})

/** Step 2: the EXACT negative at the source of each term whose keyword exists (a failed add skips its negative). */
const negativesStep = (p: Payload): Step => ({
  name: "create negative keywords",
  apply: (context) =>
    Effect.gen(function*() {
      const eligible = placedTerms(p).filter(({ index }) => typeof context.ids[harvestKeywordIdKey(index)] === "string")
      const existing = yield* upstreamNegatives(context, eligible.map(({ t }) => t.sourceCampaignId))
      const there = new Map(existing.map((n) => [`${n.adGroupId}|${keywordKey(n.text, n.matchType)}`, n]))
      const taken = (t: Term) => there.get(`${t.sourceAdGroupId}|${keywordKey(t.text, EXACT)}`)
      const pending = eligible.filter(({ t }) => taken(t) === undefined)
      const sent = yield* createPlaced(
        pending.map(({ t }) => ({ campaignId: t.sourceCampaignId, adGroupId: t.sourceAdGroupId, text: t.text, matchType: EXACT })),
        context.client.createNegativeKeywordsAcross === undefined
          ? undefined
          : (rows) => context.client.createNegativeKeywordsAcross!(context.accountId, rows),
        (campaignId, adGroupId, rows) => context.client.createNegativeKeywords(context.accountId, campaignId, adGroupId, rows)
      )
      const outcomeOf = new Map(pending.map((row, k) => [row.index, sent[k]!]))
      const made: Array<readonly [number, UpstreamNegativeKeyword]> = []
      const warnings: Array<string> = []
      for (const { t, index } of eligible) {
        const kept = taken(t)
        const outcome = outcomeOf.get(index)
        if (kept !== undefined) made.push([index, kept])
        else if (outcome !== undefined && "value" in outcome) made.push([index, outcome.value])
        else warnings.push(`term ${term(t)}: its negative was not added to ad group "${t.sourceAdGroupName}": ${outcome?.messages.join("; ") ?? "no answer"}`)
      }
      // A negative that failed leaves its keyword competing with the source, which is safe: reported, not failed.
      return {
        ids: Object.fromEntries(made.map(([index, n]) => [harvestNegativeIdKey(index), n.negativeKeywordId])),
        touched: { negativeKeywords: made.map(([, n]) => n) },
        warnings
      }
    })
})

export const HarvestSearchTerms = defineKind<Payload>({
  kind: "harvest_search_terms",
  declaration,
  reviewTier: "review",
  rule: "never: a harvest moves delivery between ad groups, so a person reviews it with the share of delivery its negatives remove",
  composite: true,
  payload: HarvestSearchTermsPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const places = yield* placesOf(view, request.terms.flatMap((t) => [t.sourceAdGroupId, t.targetAdGroupId]))
      const terms: Array<Term> = request.terms.map((t) => {
        const source = places.get(t.sourceAdGroupId)!
        const target = places.get(t.targetAdGroupId)!
        return {
          text: t.text,
          sourceCampaignId: source.campaign.campaignId,
          sourceCampaignName: source.campaign.name,
          sourceAdGroupId: source.adGroup.adGroupId,
          sourceAdGroupName: source.adGroup.name,
          targetCampaignId: target.campaign.campaignId,
          targetAdGroupId: target.adGroup.adGroupId,
          targetAdGroupName: target.adGroup.name,
          bidMicros: t.bidMicros ?? null
        }
      })
      yield* requireBidsFit(terms, places)
      const base = { currency: view.account.currency, negateAtSource: request.negateAtSource ?? true, terms }
      const payload: Payload = { ...base, priorDelivery: yield* deliveryOf(view, base, places) }
      const rails = yield* view.guardrails
      yield* requireNone([...(yield* misfits(view, payload, places)), ...guardrailReasons(payload, rails.maxDeliveryShareRemovedPct, payload.currency)])
      return { payload, summary: summary(payload) }
    }),
  // Only the entities are checked again: keywords and negatives already there at apply are this action's own from
  // an interrupted run, which the steps take rather than refuse.
  recheck: (p, view) =>
    Effect.gen(function*() {
      const places = yield* placesOf(view, p.terms.flatMap((t) => [t.sourceAdGroupId, t.targetAdGroupId]))
      yield* requireBidsFit(p.terms, places)
    }),
  autoApply: () => Effect.succeed(holds("a harvest moves delivery between ad groups, so a person reviews it")),
  steps: (p) => [keywordsStep(p), ...(p.negateAtSource ? [negativesStep(p)] : [])],
  // Creating keywords and negatives overwrites nothing recorded at proposal.
  drift: () => Effect.succeed(null),
  inverse: (p, ids) => {
    const payload: UnharvestSearchTermsPayload = {
      priorNegatives: placedTerms(p).flatMap(({ t, index }) => {
        const negativeKeywordId = ids[harvestNegativeIdKey(index)]
        return typeof negativeKeywordId === "string"
          ? [{
            negativeKeywordId,
            campaignId: t.sourceCampaignId,
            campaignName: t.sourceCampaignName,
            adGroupId: t.sourceAdGroupId,
            adGroupName: t.sourceAdGroupName,
            text: t.text,
            matchType: EXACT,
            status: "ACTIVE" as const
          }]
          : []
      }),
      priorKeywords: placedTerms(p).flatMap(({ t, index }) => {
        const keywordId = ids[harvestKeywordIdKey(index)]
        return typeof keywordId === "string"
          ? [{
            keywordId,
            adGroupId: t.targetAdGroupId,
            campaignId: t.targetCampaignId,
            text: t.text,
            matchType: EXACT,
            status: "ACTIVE" as const,
            bidMicros: t.bidMicros
          }]
          : []
      })
    }
    return {
      kind: "unharvest_search_terms",
      payload,
      summary: `Revert: remove the ${plural(payload.priorKeywords.length, "harvested keyword")} and ${
        plural(payload.priorNegatives.length, "negative keyword")
      } of the harvest: ${listed(payload.priorKeywords.map(term))}`
    }
  }
})
