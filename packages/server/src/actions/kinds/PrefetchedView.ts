/**
 * The warehouse view of a batch (a changeset's `members` call, or its members checked again at approval): every
 * keyword the batch names, and every campaign it names or those keywords belong to, read once for the whole batch
 * (two statements side by side) instead of once per member; what the batch did not name is read as the plain
 * view reads it. The reads run where the batch's would (before any lock for a `members` call, in the approval's
 * transaction for an approval), so answering from them is the view its members would each have read.
 */
import type { UpstreamCampaign, UpstreamKeyword } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import { entityRows } from "../../warehouse/EntityRows.ts"
import { toCampaign, toKeyword, type WarehouseView, warehouseView } from "./WarehouseView.ts"

/**
 * The entity ids a batch names: a body's `keywordIds` and `campaignId` (what the kinds' `prepare` look up by
 * id), and a stored payload's `campaignId` and `keywords[].keywordId` (what their `recheck` looks up).
 */
export interface Named {
  readonly keywordIds: ReadonlyArray<string>
  readonly campaignIds: ReadonlyArray<string>
}

const field = (body: unknown, name: string): unknown =>
  typeof body === "object" && body !== null && name in body ? (body as Record<string, unknown>)[name] : undefined

/** The ids the bodies or payloads name, each once. */
export const namedIn = (bodies: ReadonlyArray<unknown>): Named => {
  const keywordIds = new Set<string>()
  const campaignIds = new Set<string>()
  for (const body of bodies) {
    const ids = field(body, "keywordIds")
    if (Array.isArray(ids)) for (const id of ids) if (typeof id === "string") keywordIds.add(id)
    const keywords = field(body, "keywords")
    if (Array.isArray(keywords)) {
      for (const keyword of keywords) {
        const id = field(keyword, "keywordId")
        if (typeof id === "string") keywordIds.add(id)
      }
    }
    const campaignId = field(body, "campaignId")
    if (typeof campaignId === "string") campaignIds.add(campaignId)
  }
  return { keywordIds: [...keywordIds], campaignIds: [...campaignIds] }
}

/** The account's view with what `named` names read once up front. */
export const prefetchedView = (account: AccountRecord, named: Named) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const base = yield* warehouseView(account)
    if (named.keywordIds.length === 0 && named.campaignIds.length === 0) return base
    const { projectId } = account
    const { campaigns, keywords } = entityRows
    const [keywordRows, campaignRows] = yield* Effect.all([
      named.keywordIds.length === 0
        ? Effect.succeed([])
        : sql`SELECT ${sql.unsafe(keywords.columns)} FROM keywords WHERE project_id = ${projectId} AND keyword_id = ANY(${named.keywordIds}::text[])`
          .pipe(Effect.orDie, Effect.flatMap(keywords.decode)),
      sql`SELECT ${sql.unsafe(campaigns.columns)} FROM campaigns WHERE project_id = ${projectId}
        AND (campaign_id = ANY(${named.campaignIds}::text[])
          OR campaign_id IN (SELECT campaign_id FROM keywords WHERE project_id = ${projectId} AND keyword_id = ANY(${named.keywordIds}::text[])))`
        .pipe(Effect.orDie, Effect.flatMap(campaigns.decode))
    ], { concurrency: 2 })
    const keywordsById = new Map<string, UpstreamKeyword>(keywordRows.map((row) => [row.keywordId, toKeyword(row)]))
    const campaignsById = new Map<string, UpstreamCampaign>(campaignRows.map((row) => [row.campaignId, toCampaign(row)]))
    // What was asked, found or not: a named id the warehouse lacks is answered missing without another read.
    const keywordsAsked = new Set(named.keywordIds)
    const campaignsAsked = new Set([...named.campaignIds, ...keywordRows.map((row) => row.campaignId)])
    const view: WarehouseView = {
      ...base,
      keywords: (ids) =>
        ids.every((id) => keywordsAsked.has(id))
          ? Effect.succeed([...new Set(ids)].flatMap((id) => keywordsById.get(id) ?? []))
          : base.keywords(ids),
      campaign: (campaignId) => campaignsAsked.has(campaignId) ? Effect.succeed(campaignsById.get(campaignId)) : base.campaign(campaignId)
    }
    return view
  })
