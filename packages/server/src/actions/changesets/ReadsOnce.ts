/**
 * An upstream client whose entity reads are each made once: a changeset revert's three-way check reads every
 * member's entities as they are upstream now, and the members of one ad group (or campaign) share one read of
 * it instead of reading it again per member. Concurrent askers of the same read wait for the one call; a read
 * that failed answers its failure to every asker (the entity is as gone for each of them). Writes pass through.
 * Made for one check: a later check makes its own, so nothing read is kept past it.
 */
import type { UpstreamClient, UpstreamFailure } from "@acs/upstream/Upstream"
import { Effect } from "effect"

/** `read` made once per distinct arguments. */
const once = <Args extends ReadonlyArray<string>, A>(read: (...args: Args) => Effect.Effect<A, UpstreamFailure>) => {
  const kept = new Map<string, Effect.Effect<A, UpstreamFailure>>()
  return (...args: Args): Effect.Effect<A, UpstreamFailure> => {
    const key = args.join("\u0000")
    return Effect.flatten(Effect.suspend(() => {
      const known = kept.get(key)
      if (known !== undefined) return Effect.succeed(known)
      return Effect.map(Effect.cached(read(...args)), (cached) => {
        // Another fiber may have kept one meanwhile: all askers share the first.
        const first = kept.get(key)
        if (first !== undefined) return first
        kept.set(key, cached)
        return cached
      })
    }))
  }
}

export const readsOnce = (client: UpstreamClient): UpstreamClient => ({
  ...client,
  campaigns: once(client.campaigns),
  campaign: once(client.campaign),
  adGroups: once(client.adGroups),
  adGroup: once(client.adGroup),
  keywords: once(client.keywords),
  campaignKeywords: once(client.campaignKeywords),
  negativeKeywords: once(client.negativeKeywords),
  ads: once(client.ads)
})
