/**
 * Targeting keywords and negative keywords, with the platform's bulk semantics: one call takes at most
 * 1,000 rows; it answers HTTP 200 with `data` holding the rows that worked (in request order) and
 * `error.errors` holding one entry per failing row. The failing row is named in `field` as
 * `[<index>]`, optionally followed by the attribute, e.g. `[3]` or `[3].bidAmount` (index 0-based in the
 * request array); parse it with /^\[(\d+)\]/. A row's index in `data` is therefore its request index
 * minus the failed rows before it.
 */
import { WireKeyword, WireSelector } from "../Wire.ts"
import type { WireErrorItem } from "../Wire.ts"
import { momentOf } from "./SimulatorCalendar.ts"
import { type Answer, bulkAnswer, decodeInput, failure, invalid, notFound, ok, pageFromQuery, pageOf, WireFailure } from "./SimulatorHttp.ts"
import { IdList, KeywordCreate, KeywordUpdate, NegativeCreate, NegativeUpdate } from "./SimulatorInputs.ts"
import { adGroupAt, campaignAt } from "./SimulatorLookup.ts"
import {
  type KeywordStatus,
  recordChange,
  setStatus,
  type SimAdGroup,
  type SimCampaign,
  type SimKeyword,
  type SimNegativeKeyword,
  stopServing
} from "./SimulatorModel.ts"
import { idAt, type OrgRequest, readRoute, type Route, writeRoute } from "./SimulatorRouter.ts"
import { runSelector } from "./SimulatorSelector.ts"
import { keywordToWire, microsFromRequest, negativeToWire, type WireObject } from "./SimulatorWire.ts"

export const MAX_BULK_ROWS = 1000
/** Targeting plus negative keywords per ad group (and negatives per campaign). */
export const MAX_KEYWORDS_PER_AD_GROUP = 5000

const KEYWORD_FIELDS = new Set(Object.keys(WireKeyword.fields))

const rowFailure = (prefix: string, messageCode: string, message: string, attribute?: string) =>
  failure(400, messageCode, message, attribute === undefined ? prefix : `${prefix}.${attribute}`)

/** Runs `process` on each row; a row that throws a WireFailure becomes that row's error. */
const bulk = (request: OrgRequest, process: (row: unknown, prefix: string) => WireObject | number): Answer => {
  const rows = request.body
  if (!Array.isArray(rows)) throw invalid("the body must be an array of rows")
  if (rows.length === 0) throw invalid("the body has no rows")
  if (rows.length > MAX_BULK_ROWS) throw invalid(`at most ${MAX_BULK_ROWS} rows per call, got ${rows.length}`)
  const data: Array<WireObject | number> = []
  const errors: Array<WireErrorItem> = []
  rows.forEach((row: unknown, index) => {
    const prefix = `[${index}]`
    if (request.failingRows.has(index)) {
      errors.push({ messageCode: "INTERNAL_ERROR", message: request.failingRowMessage, field: prefix })
      return
    }
    try {
      data.push(process(row, prefix))
    } catch (error) {
      if (!(error instanceof WireFailure)) throw error
      for (const item of error.errors) {
        const field = item.field ?? ""
        errors.push({ ...item, field: field.startsWith(prefix) ? field : field === "" ? prefix : `${prefix}.${field}` })
      }
    }
  })
  return bulkAnswer(data, errors)
}

const liveKeywordCount = (adGroup: SimAdGroup): number =>
  adGroup.keywords.reduce((n, k) => n + (k.deleted ? 0 : 1), 0) + adGroup.negatives.reduce((n, k) => n + (k.deleted ? 0 : 1), 0)

const keyOf = (text: string, matchType: string) => `${matchType}|${text.trim().toLowerCase()}`

/** The moment of a write (see momentOf): changes apply from its hour on. */
const today = (request: OrgRequest): number => momentOf(request.state.now(request.account))

/** A bid from a request: null stays null; MAX_CONVERSIONS takes none, MANUAL_CPT needs more than zero. */
const bidFrom = (
  request: OrgRequest,
  campaign: SimCampaign,
  amount: { readonly amount: string; readonly currency: string } | null,
  prefix: string
): number | null => {
  if (amount === null) return null
  const micros = microsFromRequest(amount, request.account, `${prefix}.bidAmount`)
  if (campaign.biddingStrategy === "MAX_CONVERSIONS") {
    if (micros > 0) throw rowFailure(prefix, "INVALID_BID", "keywords of a MAX_CONVERSIONS campaign take no bid", "bidAmount")
    return null
  }
  if (micros === 0) throw rowFailure(prefix, "INVALID_BID", "bidAmount must be greater than zero", "bidAmount")
  return micros
}

const createKeywords = (request: OrgRequest): Answer => {
  const { campaign, adGroup } = adGroupAt(request, true)
  const live = new Set(adGroup.keywords.filter((k) => !k.deleted).map((k) => keyOf(k.text, k.matchType)))
  let count = liveKeywordCount(adGroup)
  const day = today(request)
  return bulk(request, (raw, prefix) => {
    const row = decodeInput(KeywordCreate, raw, prefix)
    const key = keyOf(row.text, row.matchType)
    if (live.has(key)) throw rowFailure(prefix, "DUPLICATE_KEYWORD", `"${row.text}" (${row.matchType}) is already in the ad group`, "text")
    if (count >= MAX_KEYWORDS_PER_AD_GROUP) {
      throw rowFailure(prefix, "KEYWORD_LIMIT_EXCEEDED", `an ad group holds at most ${MAX_KEYWORDS_PER_AD_GROUP} keywords`)
    }
    const bid = bidFrom(request, campaign, row.bidAmount ?? null, prefix)
    const status = row.status ?? "ACTIVE"
    const keyword: SimKeyword = {
      id: request.state.allocateId(),
      adGroupId: adGroup.id,
      campaignId: campaign.id,
      text: row.text.trim(),
      matchType: row.matchType,
      status,
      bidMicros: bid,
      deleted: false,
      createdDay: day,
      offPeriods: status === "PAUSED" ? [{ from: day, until: null }] : null
    }
    request.state.insertKeyword(adGroup, keyword)
    live.add(key)
    count++
    return keywordToWire(request.account, keyword)
  })
}

/** Only status and bidAmount change; text or matchType that differ are refused (that is delete + create). */
const updateKeywords = (request: OrgRequest): Answer => {
  const { campaign, adGroup } = adGroupAt(request, true)
  const day = today(request)
  return bulk(request, (raw, prefix) => {
    const row = decodeInput(KeywordUpdate, raw, prefix)
    const keyword = request.state.keyword(adGroup, row.id)
    if (keyword === undefined || keyword.deleted) throw rowFailure(prefix, "NOT_FOUND", `keyword ${row.id} not found`, "id")
    if (row.text !== undefined && row.text !== keyword.text) {
      throw rowFailure(prefix, "INVALID_INPUT", "text cannot be updated; delete the keyword and create a new one", "text")
    }
    if (row.matchType !== undefined && row.matchType !== keyword.matchType) {
      throw rowFailure(prefix, "INVALID_INPUT", "matchType cannot be updated; delete the keyword and create a new one", "matchType")
    }
    const bid = row.bidAmount === undefined ? keyword.bidMicros : bidFrom(request, campaign, row.bidAmount, prefix)
    const pastBids = recordChange(keyword.pastBids, keyword.bidMicros, bid, day)
    if (pastBids !== undefined) keyword.pastBids = pastBids
    keyword.bidMicros = bid
    if (row.status !== undefined) setStatus<KeywordStatus>(keyword, row.status, "PAUSED", day)
    return keywordToWire(request.account, keyword)
  })
}

/** Bulk deletes answer the deleted ids (integers) in `data`. */
const deleteKeywords = (request: OrgRequest): Answer => {
  const { adGroup } = adGroupAt(request, true)
  const day = today(request)
  return bulk(request, (raw, prefix) => {
    const id = decodeInput(IdList, [raw], prefix)[0]!
    const keyword = request.state.keyword(adGroup, id)
    if (keyword === undefined || keyword.deleted) throw rowFailure(prefix, "NOT_FOUND", `keyword ${id} not found`)
    keyword.deleted = true
    stopServing(keyword, day)
    return id
  })
}

interface NegativeOwner {
  readonly campaign: SimCampaign
  readonly adGroup: SimAdGroup | null
  readonly negatives: Array<SimNegativeKeyword>
  /** Keywords counted against the 5,000 limit. */
  readonly count: () => number
}

const campaignOwner = (request: OrgRequest): NegativeOwner => {
  const campaign = campaignAt(request, true)
  return {
    campaign,
    adGroup: null,
    negatives: campaign.negatives,
    count: () => campaign.negatives.reduce((n, k) => n + (k.deleted ? 0 : 1), 0)
  }
}

const adGroupOwner = (request: OrgRequest): NegativeOwner => {
  const { campaign, adGroup } = adGroupAt(request, true)
  return { campaign, adGroup, negatives: adGroup.negatives, count: () => liveKeywordCount(adGroup) }
}

const negativeRoutes = (base: string, ownerOf: (request: OrgRequest) => NegativeOwner, idIndex: number): Array<Route> => {
  const negativeAt = (request: OrgRequest, owner: NegativeOwner, id: number) => request.state.negative(owner.campaign, owner.adGroup, id)
  return [
    readRoute("GET", base, (request) => {
      const owner = ownerOf(request)
      const { items, pagination } = pageOf(owner.negatives.filter((n) => !n.deleted), pageFromQuery(request.query))
      return ok(items.map(negativeToWire), pagination)
    }),
    readRoute("GET", `${base}/:id`, (request) => {
      const negative = negativeAt(request, ownerOf(request), idAt(request, idIndex))
      if (negative === undefined) throw notFound("NegativeKeyword")
      return ok(negativeToWire(negative))
    }),
    writeRoute("POST", `${base}/bulk`, (request) => {
      const owner = ownerOf(request)
      const live = new Set(owner.negatives.filter((n) => !n.deleted).map((n) => keyOf(n.text, n.matchType)))
      let count = owner.count()
      return bulk(request, (raw, prefix) => {
        const row = decodeInput(NegativeCreate, raw, prefix)
        const key = keyOf(row.text, row.matchType)
        if (live.has(key)) throw rowFailure(prefix, "DUPLICATE_KEYWORD", `"${row.text}" (${row.matchType}) is already a negative here`, "text")
        if (count >= MAX_KEYWORDS_PER_AD_GROUP) {
          throw rowFailure(prefix, "KEYWORD_LIMIT_EXCEEDED", `at most ${MAX_KEYWORDS_PER_AD_GROUP} keywords`)
        }
        const negative: SimNegativeKeyword = {
          id: request.state.allocateId(),
          campaignId: owner.campaign.id,
          adGroupId: owner.adGroup?.id ?? null,
          text: row.text.trim(),
          matchType: row.matchType,
          status: row.status ?? "ACTIVE",
          deleted: false
        }
        request.state.insertNegative(owner.adGroup ?? owner.campaign, negative)
        live.add(key)
        count++
        return negativeToWire(negative)
      })
    }),
    writeRoute("PUT", `${base}/bulk`, (request) => {
      const owner = ownerOf(request)
      return bulk(request, (raw, prefix) => {
        const row = decodeInput(NegativeUpdate, raw, prefix)
        const negative = negativeAt(request, owner, row.id)
        if (negative === undefined || negative.deleted) throw rowFailure(prefix, "NOT_FOUND", `negative keyword ${row.id} not found`, "id")
        if ((row.text !== undefined && row.text !== negative.text) || (row.matchType !== undefined && row.matchType !== negative.matchType)) {
          throw rowFailure(prefix, "INVALID_INPUT", "only status can be updated", row.text !== undefined ? "text" : "matchType")
        }
        if (row.status !== undefined) negative.status = row.status
        return negativeToWire(negative)
      })
    }),
    writeRoute("POST", `${base}/delete/bulk`, (request) => {
      const owner = ownerOf(request)
      return bulk(request, (raw, prefix) => {
        const id = decodeInput(IdList, [raw], prefix)[0]!
        const negative = negativeAt(request, owner, id)
        if (negative === undefined || negative.deleted) throw rowFailure(prefix, "NOT_FOUND", `negative keyword ${id} not found`)
        negative.deleted = true
        return id
      })
    })
  ]
}

export const keywordRoutes: ReadonlyArray<Route> = [
  readRoute("GET", "/campaigns/:id/adgroups/:id/targetingkeywords", (request) => {
    const { adGroup } = adGroupAt(request, true)
    const { items, pagination } = pageOf(adGroup.keywords.filter((k) => !k.deleted), pageFromQuery(request.query))
    return ok(items.map((keyword) => keywordToWire(request.account, keyword)), pagination)
  }),
  readRoute("GET", "/campaigns/:id/adgroups/:id/targetingkeywords/:id", (request) => {
    const { adGroup } = adGroupAt(request, true)
    const keyword = request.state.keyword(adGroup, idAt(request, 2))
    if (keyword === undefined) throw notFound("Keyword")
    return ok(keywordToWire(request.account, keyword))
  }),
  writeRoute("POST", "/campaigns/:id/adgroups/:id/targetingkeywords/bulk", createKeywords),
  writeRoute("PUT", "/campaigns/:id/adgroups/:id/targetingkeywords/bulk", updateKeywords),
  writeRoute("POST", "/campaigns/:id/adgroups/:id/targetingkeywords/delete/bulk", deleteKeywords),
  // Campaign-wide keyword find (the platform has it too): one call pages through every ad group.
  readRoute("POST", "/campaigns/:id/adgroups/targetingkeywords/find", (request) => {
    const campaign = campaignAt(request, true)
    const selector = decodeInput(WireSelector, request.body, "selector")
    const keywords = campaign.adGroups
      .filter((adGroup) => !adGroup.deleted)
      .flatMap((adGroup) => adGroup.keywords.map((keyword) => keywordToWire(request.account, keyword)))
    const { items, pagination } = runSelector(keywords, selector, KEYWORD_FIELDS)
    return ok(items, pagination)
  }),
  ...negativeRoutes("/campaigns/:id/negativekeywords", campaignOwner, 1),
  ...negativeRoutes("/campaigns/:id/adgroups/:id/negativekeywords", adGroupOwner, 2)
]
