/** keyword_status: activates or pauses keywords that may span ad groups. Pausing auto-applies (docs/contract.md 3.1);
 * the payload keeps each keyword's prior status, which the inverse restores. */
import { keywordStatus as declaration } from "@acs/domain/ProposalKinds"
import { Effect, Schema } from "effect"
import { keywordEditsStep } from "./BulkParts.ts"
import { defineKind } from "./Kind.ts"
import { clears, decodeBody, holds, noOp } from "./KindSupport.ts"
import { type KeywordEdits, keywordEditsDrift, knownKeywords, listed, plural, quoted } from "./KeywordSupport.ts"

const Status = Schema.Literal("ACTIVE", "PAUSED")

const StatusChange = Schema.Struct({
  keywordId: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  text: Schema.String,
  matchType: Schema.Literal("EXACT", "BROAD"),
  priorStatus: Status,
  newStatus: Status
})

export const KeywordStatusPayload = Schema.Struct({ status: Status, keywords: Schema.Array(StatusChange) })
type Payload = typeof KeywordStatusPayload.Type

const decode = decodeBody(declaration.body)

const summary = (p: Payload) =>
  `${p.status === "PAUSED" ? "Pause" : "Activate"} ${plural(p.keywords.length, "keyword")}: ${listed(p.keywords.map(quoted))}`

const edits = (p: Payload): KeywordEdits<"ACTIVE" | "PAUSED"> => ({
  name: "update keyword statuses",
  field: "status",
  read: (keyword) => keyword.status,
  show: (status) => status,
  change: (keywordId, target) => ({ keywordId, status: target }),
  edits: p.keywords.map((k) => ({ ...k, prior: k.priorStatus, target: k.newStatus }))
})

export const KeywordStatus = defineKind<Payload>({
  kind: "keyword_status",
  declaration,
  reviewTier: "review",
  rule: "pausing keywords",
  composite: false,
  payload: KeywordStatusPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const keywords = yield* knownKeywords(view, request.keywordIds)
      const changing = keywords.filter((k) => k.status !== request.status)
      if (changing.length === 0) {
        return yield* noOp(`${keywords.length === 1 ? "the keyword is" : `all ${keywords.length} keywords are`} already ${request.status}`)
      }
      // Keywords already in the status are left out: nothing to apply, nothing to restore.
      const payload: Payload = {
        status: request.status,
        keywords: changing.map((k) => ({
          keywordId: k.keywordId,
          adGroupId: k.adGroupId,
          campaignId: k.campaignId,
          text: k.text,
          matchType: k.matchType,
          priorStatus: k.status,
          newStatus: request.status
        }))
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const keywords = yield* knownKeywords(view, p.keywords.map((k) => k.keywordId))
      if (keywords.every((k) => k.status === p.status)) return yield* noOp(`every keyword is already ${p.status}`)
    }),
  autoApply: (p) =>
    Effect.succeed(
      p.status === "PAUSED"
        ? clears(`pausing ${plural(p.keywords.length, "keyword")} is in the auto-apply set`)
        : holds(`activating ${plural(p.keywords.length, "keyword")}: only pausing keywords auto-applies`)
    ),
  steps: (p) => [keywordEditsStep(edits(p))],
  drift: (p, context) => keywordEditsDrift(edits(p))(context),
  inverse: (p) => {
    const payload: Payload = {
      status: p.status === "PAUSED" ? "ACTIVE" : "PAUSED",
      keywords: p.keywords.map((k) => ({ ...k, priorStatus: k.newStatus, newStatus: k.priorStatus }))
    }
    return { kind: "keyword_status", payload, summary: `Revert: ${summary(payload)}` }
  }
})
