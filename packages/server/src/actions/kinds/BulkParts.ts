/**
 * A step's upstream work as a part of the platform's bulk calls (Kind.ts `BulkPart`): one read of the place its
 * rows are in, then one bulk call per place (of at most BULK_ROWS rows). A step applies its part alone; the members
 * of a changeset whose parts share a place share the read and the calls (worker/MemberBulk.ts), each row's outcome
 * mapped back to the part that asked for it. Every part reads before it writes, so rows that landed in a run whose
 * outcome was not recorded are taken, not written again: an edit already at its target, a keyword or negative
 * already there.
 */
import type { BulkResult, UpstreamFailure, UpstreamKeyword } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import { type BulkPart, Drift, type Ids, type KeywordRow, type Step, type StepContext, type StepFailure, type StepResult, StepRefused } from "./Kind.ts"
import { driftReasons, groupBy, type KeywordEdits, keywordKey, keywordLabel, keywordRows, placeKey, placeText, quoted, upstreamKeywords, upstreamNegatives } from "./KeywordSupport.ts"

/** The platform's most rows in one bulk call. */
export const BULK_ROWS = 1000

/** What became of a part: applied (one of its rows landed), or refused (every row). */
export type PartResult =
  | { readonly _tag: "Applied"; readonly result: StepResult }
  | { readonly _tag: "Refused"; readonly message: string }

/** The parts' place, read once. */
export interface PartsRead {
  /** Per part: why its rows moved since proposal (a drift), or null. */
  readonly drift: ReadonlyArray<string | null>
  /**
   * Writes the first `n` parts, one bulk call per place; `overDrift`: a person approved writing over a drift (the
   * moved rows are written too, saying so; a keyword removed outside acs stays removed).
   */
  readonly write: (n: number, overDrift: boolean) => Effect.Effect<ReadonlyArray<PartResult>, UpstreamFailure>
}

/** Where a part's rows are, when they are all in one place: parts with the same place share a bulk call. */
export const partPlace = (part: BulkPart): string | undefined => {
  const places = new Set(
    part._tag === "UpdateKeywords"
      ? part.rows.map((row) => `${row.campaignId}/${row.adGroupId}`)
      : part._tag === "CreateKeywords"
      ? [`${part.campaignId}/${part.adGroupId}`]
      : part.rows.map(placeKey)
  )
  return places.size === 1 ? [...places][0] : undefined
}

const every = (warnings: ReadonlyArray<string>) => `every row failed: ${warnings.join("; ")}`

/** One part's rows landed (with their ids) and refused, as a result. */
const resultOf = (touched: StepResult["touched"], landed: number, ids: Ids, warnings: ReadonlyArray<string>): PartResult =>
  landed > 0 ? { _tag: "Applied", result: { ids, touched, warnings } } : { _tag: "Refused", message: every(warnings) }

/** Rows of many parts, each knowing its part and its index there: per part, and in one list. */
const flatten = <R>(parts: ReadonlyArray<ReadonlyArray<R>>) => {
  const byPart = parts.map((rows, part) => rows.map((row, index) => ({ part, index, row })))
  return { byPart, rows: byPart.flat() }
}

/** Sends rows in bulk calls of at most BULK_ROWS, one place at a time; each row's outcome (its value or why not), in order. */
const sendInChunks = <R, V>(
  rows: ReadonlyArray<R>,
  placeOf: (row: R) => string,
  send: (chunk: ReadonlyArray<R>) => Effect.Effect<BulkResult<V>, UpstreamFailure>
) =>
  Effect.gen(function*() {
    const outcomes = new Map<R, { readonly value: V } | { readonly messages: Array<string> }>()
    for (const same of groupBy(rows, placeOf).values()) {
      for (let start = 0; start < same.length; start += BULK_ROWS) {
        const chunk = same.slice(start, start + BULK_ROWS)
        const result = yield* send(chunk)
        for (const landed of result.succeeded) outcomes.set(chunk[landed.index]!, { value: landed.value })
        for (const failed of result.failed) {
          const row = chunk[failed.index]!
          const known = outcomes.get(row)
          if (known !== undefined && "messages" in known) known.messages.push(failed.message)
          else outcomes.set(row, { messages: [failed.message] })
        }
      }
    }
    return outcomes
  })

const readUpdates = (context: StepContext, parts: ReadonlyArray<ReadonlyArray<KeywordRow>>) =>
  Effect.map(upstreamKeywords(context, parts.flat()), (current): PartsRead => {
    const standings = parts.map((rows) => rows.map((row) => row.standing(current.get(row.keywordId))))
    return {
      drift: standings.map((part) => {
        const reasons = driftReasons(part)
        return reasons.length === 0 ? null : reasons.join("; ")
      }),
      write: (n, overDrift) =>
        Effect.gen(function*() {
          const { byPart, rows } = flatten(parts.slice(0, n))
          const standing = (r: (typeof rows)[number]) => standings[r.part]![r.index]!
          const written = yield* sendInChunks(
            rows.filter((r) => standing(r) === "pending" || (overDrift && typeof standing(r) === "object" && current.has(r.row.keywordId))),
            (r) => r.row.adGroupId,
            (chunk) => context.client.updateKeywords(context.accountId, chunk[0]!.row.campaignId, chunk[0]!.row.adGroupId, chunk.map((r) => r.row.change))
          )
          return parts.slice(0, n).map((_, part) => {
            const mine = byPart[part]!
            const touched: Array<UpstreamKeyword> = []
            const warnings = overDrift ? driftReasons(standings[part]!).map((reason) => `approved over drift: ${reason}`) : []
            for (const r of mine) {
              const outcome = written.get(r)
              const there = current.get(r.row.keywordId)
              if (outcome === undefined) {
                if (there !== undefined && standing(r) === "done") touched.push(there)
              } else if ("value" in outcome) touched.push(outcome.value)
              else warnings.push(`${keywordLabel(r.row, r.index)}: ${outcome.messages.join("; ")}`)
            }
            return resultOf({ keywords: touched }, touched.length, {}, warnings)
          })
        })
    }
  })

/**
 * Writes the first `n` parts of rows to create: a row already there (`there`: same text and match type in its
 * place) is the part's, from a run whose outcome was not recorded, taken and not created twice (the platform would
 * refuse the duplicate anyway); the others go in one bulk call per place. Each part's rows made, by their index.
 */
const createRows = <R, V>(
  parts: ReadonlyArray<ReadonlyArray<R>>,
  n: number,
  rules: {
    readonly there: (row: R) => V | undefined
    readonly placeOf: (row: R) => string
    readonly send: (chunk: ReadonlyArray<R>) => Effect.Effect<BulkResult<V>, UpstreamFailure>
    readonly label: (row: R) => string
    readonly result: (made: ReadonlyArray<readonly [number, V]>, part: number, warnings: ReadonlyArray<string>) => PartResult
  }
) =>
  Effect.gen(function*() {
    const { byPart, rows } = flatten(parts.slice(0, n))
    const written = yield* sendInChunks(
      rows.filter((r) => rules.there(r.row) === undefined),
      (r) => rules.placeOf(r.row),
      (chunk) => rules.send(chunk.map((r) => r.row))
    )
    return parts.slice(0, n).map((_, part) => {
      const made: Array<readonly [number, V]> = []
      const warnings: Array<string> = []
      for (const r of byPart[part]!) {
        const outcome = written.get(r)
        const taken = rules.there(r.row)
        if (taken !== undefined) made.push([r.index, taken])
        else if (outcome !== undefined && "value" in outcome) made.push([r.index, outcome.value])
        else if (outcome !== undefined) warnings.push(`${rules.label(r.row)}: ${outcome.messages.join("; ")}`)
      }
      return rules.result(made, part, warnings)
    })
  })

const readCreates = (context: StepContext, parts: ReadonlyArray<Extract<BulkPart, { readonly _tag: "CreateKeywords" }>>) =>
  Effect.gen(function*() {
    const places = [...groupBy(parts, (part) => part.adGroupId).values()].map((same) => same[0]!)
    const lists = yield* Effect.forEach(places, (place) => context.client.keywords(context.accountId, place.campaignId, place.adGroupId))
    const there = new Map(lists.flat().map((k) => [`${k.adGroupId}|${keywordKey(k.text, k.matchType)}`, k]))
    const read: PartsRead = {
      drift: parts.map(() => null),
      write: (n) =>
        createRows(parts.map((part) => part.rows.map((row) => ({ ...row, place: part }))), n, {
          there: (row) => there.get(`${row.place.adGroupId}|${keywordKey(row.text, row.matchType)}`),
          placeOf: (row) => row.place.adGroupId,
          send: (chunk) =>
            context.client.createKeywords(context.accountId, chunk[0]!.place.campaignId, chunk[0]!.place.adGroupId,
              chunk.map((row) => ({ text: row.text, matchType: row.matchType, bidMicros: row.bidMicros }))),
          label: (row) => `keyword ${quoted(row)}`,
          result: (made, part, warnings) =>
            resultOf({ keywords: made.map(([, k]) => k) }, made.length,
              Object.fromEntries(made.map(([at, k]) => [parts[part]!.idKey(at), k.keywordId])), warnings)
        })
    }
    return read
  })

const readNegatives = (context: StepContext, parts: ReadonlyArray<Extract<BulkPart, { readonly _tag: "CreateNegatives" }>>) =>
  Effect.gen(function*() {
    const existing = yield* upstreamNegatives(context, parts.flatMap((part) => part.rows.map((row) => row.campaignId)))
    const there = new Map(existing.map((n) => [`${placeKey(n)}|${keywordKey(n.text, n.matchType)}`, n]))
    const read: PartsRead = {
      drift: parts.map(() => null),
      write: (n) =>
        createRows(parts.map((part) => part.rows), n, {
          there: (row) => there.get(`${placeKey(row)}|${keywordKey(row.text, row.matchType)}`),
          placeOf: placeKey,
          send: (chunk) =>
            context.client.createNegativeKeywords(context.accountId, chunk[0]!.campaignId, chunk[0]!.adGroupId,
              chunk.map((row) => ({ text: row.text, matchType: row.matchType }))),
          label: (row) => `negative keyword ${quoted(row)} to ${placeText(row)}`,
          result: (made, part, warnings) =>
            resultOf({ negativeKeywords: made.map(([, k]) => k) }, made.length,
              Object.fromEntries(made.map(([at, k]) => [parts[part]!.idKey(at), k.negativeKeywordId])), warnings)
        })
    }
    return read
  })

/** Reads the place of parts of one kind (a changeset's members, or one step's part alone). */
export const readParts = (context: StepContext, parts: ReadonlyArray<BulkPart>): Effect.Effect<PartsRead, UpstreamFailure> => {
  const first = parts[0]
  if (first === undefined) return Effect.succeed({ drift: [], write: () => Effect.succeed([]) })
  switch (first._tag) {
    case "UpdateKeywords":
      return readUpdates(context, parts.flatMap((part) => (part._tag === "UpdateKeywords" ? [part.rows] : [])))
    case "CreateKeywords":
      return readCreates(context, parts.flatMap((part) => (part._tag === "CreateKeywords" ? [part] : [])))
    case "CreateNegatives":
      return readNegatives(context, parts.flatMap((part) => (part._tag === "CreateNegatives" ? [part] : [])))
  }
}

/**
 * A step of one bulk part, applied alone: a drift anywhere stops it before any write (unless a person approved
 * writing over it), so the change never lands half on someone else's edit.
 */
export const bulkStep = (name: string, part: BulkPart): Step => ({
  name,
  bulk: part,
  apply: (context): Effect.Effect<StepResult, StepFailure> =>
    Effect.gen(function*() {
      const read = yield* readParts(context, [part])
      const drift = read.drift[0]
      if (drift != null && !context.acceptDrift) return yield* new Drift({ reason: drift })
      const [result] = yield* read.write(1, context.acceptDrift)
      if (result === undefined || result._tag === "Refused") return yield* new StepRefused({ message: result?.message ?? every([]) })
      return result.result
    })
})

/** Sets a field on keywords that may span ad groups: one bulk update per ad group. */
export const keywordEditsStep = <F extends string | number | null>(spec: KeywordEdits<F>): Step =>
  bulkStep(spec.name, { _tag: "UpdateKeywords", rows: keywordRows(spec) })
