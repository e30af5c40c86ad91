/**
 * The keyword kinds' auto-apply rules (docs/contract.md 3.1) at, just inside and just outside each bound: at most 10 EXACT
 * keywords, each effective bid at most 1.5 × the account's 30-day average cost per tap; pausing keywords; negative
 * keywords always. Pure: the definitions are called with hand-built policy facts.
 */
import { Effect, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { Kind, PolicyFacts, Verdict } from "../../src/actions/kinds/Kind.ts"
import { AddKeywords, MAX_AUTO_KEYWORDS } from "../../src/actions/kinds/AddKeywords.ts"
import { AddNegativeKeywords } from "../../src/actions/kinds/AddNegativeKeywords.ts"
import { ChangeMatchType } from "../../src/actions/kinds/ChangeMatchType.ts"
import { KeywordBidChange } from "../../src/actions/kinds/KeywordBidChange.ts"
import { KeywordStatus } from "../../src/actions/kinds/KeywordStatus.ts"
import { RemoveKeywords } from "../../src/actions/kinds/RemoveKeywords.ts"
import { RemoveNegativeKeywords } from "../../src/actions/kinds/RemoveNegativeKeywords.ts"

const facts = (avgCpt: number | null): PolicyFacts => ({
  campaignCpa30d: () => Effect.succeed(null),
  campaignEvidence30d: () => Effect.die("the keyword rules do not read the campaign evidence"),
  minimumEvidence: Effect.die("these rules do not read the evidence gate"),
  accountAvgCpt30d: Effect.succeed(avgCpt),
  cpaBand: () => Effect.succeed(null)
})

/** The kind's verdict on a payload, decoded by the kind's own schema (so a wrong test payload fails loudly). */
const verdict = (kind: Kind, payload: unknown, avgCpt: number | null): Verdict =>
  kind.use((definition) => Effect.runSync(definition.autoApply(Schema.decodeUnknownSync(definition.payload)(payload), facts(avgCpt))))

type MatchType = "EXACT" | "BROAD"

const addKeywords = (keywords: ReadonlyArray<{ matchType: MatchType; bidMicros: number | null }>, defaultBidMicros = 1_000_000) => ({
  campaignId: "1",
  campaignName: "Campaign",
  adGroupId: "2",
  adGroupName: "Ad group",
  currency: "USD",
  defaultBidMicros,
  keywords: keywords.map((k, i) => ({ text: `keyword ${i}`, ...k }))
})

/** The largest whole-micro bid within 1.5 × avg: exactly 1.5 × avg when avg is even. */
const bound = (avg: number) => Math.floor((avg * 3) / 2)

const avgCpt = fc.integer({ min: 1, max: 500_000_000 })
const evenAvgCpt = avgCpt.map((n) => n * 2)

describe("add_keywords auto-apply rule", () => {
  it("clears 1 to 10 EXACT keywords and holds 11 or more, naming the count", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 40 }), evenAvgCpt, (count, avg) => {
      const result = verdict(AddKeywords, addKeywords(Array.from({ length: count }, () => ({ matchType: "EXACT" as const, bidMicros: bound(avg) }))), avg)
      expect(result.clears).toBe(count <= MAX_AUTO_KEYWORDS)
      if (!result.clears) expect(result.rule).toContain(`${count} keywords is more than the ${MAX_AUTO_KEYWORDS}`)
    }))
    // Just inside and just outside, explicitly.
    const at = (count: number) => verdict(AddKeywords, addKeywords(Array.from({ length: count }, () => ({ matchType: "EXACT" as const, bidMicros: 100 }))), 1_000)
    expect(at(10).clears).toBe(true)
    expect(at(11).clears).toBe(false)
  })

  it("holds as soon as one keyword is BROAD, naming it", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 10 }), fc.nat(), evenAvgCpt, (count, position, avg) => {
      const broad = position % count
      const keywords = Array.from({ length: count }, (_, i) => ({ matchType: (i === broad ? "BROAD" : "EXACT") as MatchType, bidMicros: bound(avg) }))
      const result = verdict(AddKeywords, addKeywords(keywords), avg)
      expect(result.clears).toBe(false)
      expect(result.rule).toContain(`"keyword ${broad}" (BROAD)`)
      expect(result.rule).toMatch(/only EXACT keywords auto-apply/)
    }))
    expect(verdict(AddKeywords, addKeywords([{ matchType: "EXACT", bidMicros: 100 }]), 1_000).clears).toBe(true)
    expect(verdict(AddKeywords, addKeywords([{ matchType: "BROAD", bidMicros: 100 }]), 1_000).clears).toBe(false)
  })

  it("clears a bid of exactly 1.5 × the average CPT and holds one micro above it", () => {
    fc.assert(fc.property(evenAvgCpt, fc.integer({ min: 0, max: 9 }), (avg, position) => {
      const limit = (avg / 2) * 3
      const keywords = (bid: number) =>
        Array.from({ length: 10 }, (_, i) => ({ matchType: "EXACT" as const, bidMicros: i === position ? bid : Math.max(1, limit - 7) }))
      expect(verdict(AddKeywords, addKeywords(keywords(limit)), avg).clears).toBe(true)
      expect(verdict(AddKeywords, addKeywords(keywords(limit - 1)), avg).clears).toBe(true)
      const above = verdict(AddKeywords, addKeywords(keywords(limit + 1)), avg)
      expect(above.clears).toBe(false)
      expect(above.rule).toContain(`"keyword ${position}" (EXACT)`)
      expect(above.rule).toMatch(/above 1\.5 × the account's 30-day average cost per tap/)
    }))
  })

  it("compares in whole micros when 1.5 × an odd average is fractional", () => {
    fc.assert(fc.property(avgCpt.filter((n) => n % 2 === 1), (avg) => {
      expect(verdict(AddKeywords, addKeywords([{ matchType: "EXACT", bidMicros: bound(avg) }]), avg).clears).toBe(true)
      expect(verdict(AddKeywords, addKeywords([{ matchType: "EXACT", bidMicros: bound(avg) + 1 }]), avg).clears).toBe(false)
    }))
  })

  it("bounds a keyword without a bid by the ad group's default bid", () => {
    fc.assert(fc.property(evenAvgCpt, (avg) => {
      const limit = (avg / 2) * 3
      expect(verdict(AddKeywords, addKeywords([{ matchType: "EXACT", bidMicros: null }], limit), avg).clears).toBe(true)
      const over = verdict(AddKeywords, addKeywords([{ matchType: "EXACT", bidMicros: null }], limit + 1), avg)
      expect(over.clears).toBe(false)
      expect(over.rule).toContain('"keyword 0" (EXACT)')
      // Its own bid wins over the default.
      expect(verdict(AddKeywords, addKeywords([{ matchType: "EXACT", bidMicros: limit }], limit + 1), avg).clears).toBe(true)
    }))
  })

  it("holds without an average CPT (no taps in 30 days), naming every reason", () => {
    const held = verdict(AddKeywords, addKeywords([{ matchType: "BROAD", bidMicros: 1 }]), null)
    expect(held.clears).toBe(false)
    expect(held.rule).toMatch(/no taps in the last 30 days/)
    expect(held.rule).toMatch(/only EXACT/)
  })

  it("states the numbers when it clears", () => {
    const result = verdict(AddKeywords, addKeywords([{ matchType: "EXACT", bidMicros: 1_500_000 }]), 1_000_000)
    expect(result).toEqual({
      clears: true,
      rule: "1 EXACT keyword (at most 10), each bid at most 1.5 × the account's 30-day average cost per tap 1.00 USD = 1.50 USD"
    })
  })
})

const keywordStatus = (status: "ACTIVE" | "PAUSED", count: number) => ({
  status,
  keywords: Array.from({ length: count }, (_, i) => ({
    keywordId: String(i),
    adGroupId: "2",
    campaignId: "1",
    text: `keyword ${i}`,
    matchType: "EXACT",
    priorStatus: status === "PAUSED" ? "ACTIVE" : "PAUSED",
    newStatus: status
  }))
})

describe("keyword_status auto-apply rule", () => {
  it("clears pausing and holds activating, for any number of keywords", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 1000 }), fc.option(avgCpt, { nil: null }), (count, avg) => {
      expect(verdict(KeywordStatus, keywordStatus("PAUSED", count), avg).clears).toBe(true)
      const activate = verdict(KeywordStatus, keywordStatus("ACTIVE", count), avg)
      expect(activate.clears).toBe(false)
      expect(activate.rule).toMatch(/only pausing keywords auto-applies/)
    }))
  })
})

describe("the other keyword kinds", () => {
  const place = { campaignId: "1", campaignName: "Campaign", adGroupId: null, adGroupName: null }
  it("always clear adding and removing negative keywords", () => {
    expect(verdict(AddNegativeKeywords, { negatives: [{ ...place, text: "free", matchType: "BROAD" }] }, null).clears).toBe(true)
    expect(
      verdict(RemoveNegativeKeywords, { priorNegatives: [{ ...place, negativeKeywordId: "9", text: "free", matchType: "BROAD", status: "ACTIVE" }] }, null)
        .clears
    ).toBe(true)
  })

  it("never clear bid changes, match type changes or removals", () => {
    const keyword = { keywordId: "9", adGroupId: "2", campaignId: "1", text: "x" }
    expect(verdict(KeywordBidChange, { currency: "USD", keywords: [{ ...keyword, priorBidMicros: 2, newBidMicros: 1 }] }, 1_000).clears)
      .toBe(false)
    expect(
      verdict(ChangeMatchType, {
        ...keyword,
        adGroupName: "Ad group",
        priorMatchType: "BROAD",
        newMatchType: "EXACT",
        priorBidMicros: null,
        priorStatus: "ACTIVE"
      }, 1_000).clears
    ).toBe(false)
    expect(
      verdict(RemoveKeywords, { priorKeywords: [{ ...keyword, matchType: "EXACT", status: "ACTIVE", bidMicros: null }] }, 1_000).clears
    ).toBe(false)
  })
})
