/**
 * Rows to create that span ad groups, sent in the fewest calls the platform allows: where its bulk create takes each
 * row's place (v1), one call per BULK_ROWS rows over every ad group; otherwise (v5) one call per ad group (per
 * BULK_ROWS rows). Each row's outcome, in the rows' order: its value, or why not.
 */
import type { BulkResult, UpstreamFailure } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import { BULK_ROWS } from "./BulkParts.ts"
import { groupBy } from "./KeywordSupport.ts"

export type RowOutcome<V> = { readonly value: V } | { readonly messages: ReadonlyArray<string> }

export const createPlaced = <R extends { readonly campaignId: string; readonly adGroupId: string | null }, V>(
  rows: ReadonlyArray<R>,
  across: ((chunk: ReadonlyArray<R>) => Effect.Effect<BulkResult<V>, UpstreamFailure>) | undefined,
  perPlace: (campaignId: string, adGroupId: R["adGroupId"], chunk: ReadonlyArray<R>) => Effect.Effect<BulkResult<V>, UpstreamFailure>
): Effect.Effect<ReadonlyArray<RowOutcome<V>>, UpstreamFailure> =>
  Effect.gen(function*() {
    const indexed = rows.map((row, index) => ({ row, index }))
    const groups = across === undefined
      ? [...groupBy(indexed, ({ row }) => `${row.campaignId}/${row.adGroupId ?? ""}`).values()]
      : indexed.length === 0 ? [] : [indexed]
    const outcomes = new Map<number, { value: V } | { messages: Array<string> }>()
    for (const group of groups) {
      for (let start = 0; start < group.length; start += BULK_ROWS) {
        const chunk = group.slice(start, start + BULK_ROWS)
        const first = chunk[0]!.row
        const result = yield* across === undefined
          ? perPlace(first.campaignId, first.adGroupId, chunk.map(({ row }) => row))
          : across(chunk.map(({ row }) => row))
        for (const landed of result.succeeded) outcomes.set(chunk[landed.index]!.index, { value: landed.value })
        for (const failed of result.failed) {
          const at = chunk[failed.index]!.index
          const known = outcomes.get(at)
          if (known !== undefined && "messages" in known) known.messages.push(failed.message)
          else outcomes.set(at, { messages: [failed.message] })
        }
      }
    }
    return rows.map((_, index): RowOutcome<V> => outcomes.get(index) ?? { messages: ["the platform answered nothing for this row"] })
  })
