/**
 * `POST /integrations/slack/interactions` (docs/contract.md 6.1): a tap on Approve or Reject in a `slack_app`
 * message. Outside /api/v1: Slack's signature is the credential. Refused before the payload is decoded —
 * missing headers, a timestamp past 5 minutes, a signature no org's secret makes, a signature seen before
 * (webhooks/SlackSigningSecrets.ts) — then the Slack user is mapped to the person who linked it, and the decision
 * is that person's own: the same `Access.check` and the same operation the console calls (approveAction,
 * rejectAction, approveChangeset with the plan hash the button carries, rejectChangeset), so the grant, who may
 * approve, two people for high risk, expiry and a stale plan hold as they do there. Slack is answered 200 once
 * the decision is made; the outcome then replaces the message through the interaction's `response_url`, and a
 * refusal is said to the person alone (docs/decisions/events-and-webhooks.md "Slack approvals: outcome for the channel, refusal for the person").
 */
import type { AcsError } from "@acs/domain/Errors"
import { ActionRecord } from "@acs/domain/Actions"
import { Changeset } from "@acs/domain/Changesets"
import { SLACK_INTERACTIONS_PATH } from "@acs/domain/Slack"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option, Schema } from "effect"
import { Access } from "../auth/Access.ts"
import { People, personPrincipal } from "../auth/People.ts"
import { makeOperate } from "../operations/Operate.ts"
import { toDeclaredError } from "../operations/Failures.ts"
import { APPROVE, type ButtonTarget, REJECT, slackAppMessage } from "../webhooks/SlackAppMessage.ts"
import { SlackAppFacts } from "../webhooks/SlackAppFacts.ts"
import { type SlackRefusal, SlackSigningSecrets } from "../webhooks/SlackSigningSecrets.ts"
import { WebhookConfig } from "../webhooks/WebhookWorker.ts"
import { urlRefusal } from "../webhooks/WebhookTargets.ts"
import { readJsonText } from "./RequestBody.ts"
import { pathOf } from "./RequestPath.ts"

/** An interaction as Slack sends it, the parts acs reads (https://api.slack.com/reference/interaction-payloads). */
const Interaction = Schema.Struct({
  type: Schema.String,
  user: Schema.Struct({ id: Schema.String }),
  response_url: Schema.optional(Schema.String),
  actions: Schema.optional(Schema.Array(Schema.Struct({ action_id: Schema.String, value: Schema.optional(Schema.String) })))
})
const decodeInteraction = Schema.decodeUnknownOption(Schema.parseJson(Interaction))

const Target = Schema.parseJson(Schema.Struct({
  projectId: Schema.String,
  actionId: Schema.optional(Schema.String),
  changesetId: Schema.optional(Schema.String),
  planHash: Schema.optional(Schema.String)
}))
const decodeTarget = Schema.decodeUnknownOption(Target)
const encodeAction = Schema.encodeSync(ActionRecord)
const encodeChangeset = Schema.encodeSync(Changeset)

const REFUSALS: Readonly<Record<SlackRefusal, string>> = {
  missing: "X-Slack-Signature and X-Slack-Request-Timestamp are required",
  stale: "the request timestamp is more than 5 minutes from now",
  bad_signature: "the signature does not match the Slack signing secret",
  replayed: "this request was taken already (a replay)"
}

const refused = (why: SlackRefusal) =>
  HttpServerResponse.unsafeJson({ error: { code: "unauthorized", message: `Slack request refused: ${REFUSALS[why]}` } }, { status: 401 })

/** A server message as a sentence: capitalized, one final period. */
const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1).replace(/\.$/, "")}.`

/** A refusal of the decision, in words for the person who tapped. */
export const refusalWords = (error: AcsError, role: string): string => {
  switch (error._tag) {
    case "ForbiddenScope":
      return "required_grant" in error && error.required_grant === "approve"
        ? `You cannot approve or reject changes: your role in acs (${role}) does not include approving. An admin can make you an approver.`
        : `You cannot approve this change: ${error.message.replace(/\.$/, "")}.`
    case "AccountMismatch":
      return "You cannot decide this change: it is in an account acs does not let you reach."
    case "NotFound":
      return "acs has no such change any more."
    case "RateLimited":
      return "Too many decisions from you just now: try again in a minute."
    default:
      return `Not done: ${sentence(error.message)}`
  }
}

export class SlackInteractions extends Effect.Service<SlackInteractions>()("acs/SlackInteractions", {
  effect: Effect.gen(function*() {
    const secrets = yield* SlackSigningSecrets
    const people = yield* People
    const access = yield* Access
    const facts = yield* SlackAppFacts
    const operate = yield* makeOperate
    const { allowPrivate } = yield* WebhookConfig

    /** Where Slack wants its answer: Slack's own host, https (any public https URL only when private networks are allowed, for tests). */
    const responseUrlRefusal = (url: string): string | undefined => {
      const refusal = urlRefusal(url, allowPrivate)
      if (refusal !== undefined) return refusal
      return allowPrivate || new URL(url).hostname === "hooks.slack.com" ? undefined : "not a Slack response URL"
    }

    /** Posts `message` to the interaction's response URL; its failure is logged, the tap already answered. */
    const reply = (url: string | undefined, message: Readonly<Record<string, unknown>>) =>
      Effect.gen(function*() {
        if (url === undefined) return
        const refusal = responseUrlRefusal(url)
        if (refusal !== undefined) return yield* Effect.logWarning("Slack response_url refused").pipe(Effect.annotateLogs({ refusal }))
        const response = yield* Effect.tryPromise(() =>
          fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(message),
            redirect: "error",
            signal: AbortSignal.timeout(10_000)
          })
        )
        if (!response.ok) yield* Effect.logWarning("Slack response_url answered an error").pipe(Effect.annotateLogs({ status: response.status }))
      }).pipe(Effect.catchAll((error) => Effect.logWarning("Slack response_url unreachable", error)), Effect.forkDaemon, Effect.asVoid)

    /** A reply only the person who tapped sees; the channel's message stays as it is. */
    const toTapper = (text: string) => ({ response_type: "ephemeral", replace_original: false, text })

    /** The decision the tap asks for, as the person, through the operations the console calls. */
    const decide = (principal: ReturnType<typeof personPrincipal>, approve: boolean, target: ButtonTarget) =>
      Effect.gen(function*() {
        const { projectId } = target
        if (target.actionId !== undefined) {
          const path = { projectId, actionId: target.actionId }
          const record = approve
            ? yield* Effect.flatMap(access.checkAs(principal, "approveAction", projectId, false), (grant) =>
              operate.run("approveAction", grant, { path }))
            : yield* Effect.flatMap(access.checkAs(principal, "rejectAction", projectId, false), (grant) =>
              operate.run("rejectAction", grant, { path, payload: { reason: "rejected in Slack" } }))
          return { action: encodeAction(record), status: record.status }
        }
        if (target.changesetId === undefined) return yield* Effect.dieMessage("a Slack button bound to nothing")
        const path = { projectId, changesetId: target.changesetId }
        const changeset = approve
          ? yield* Effect.flatMap(access.checkAs(principal, "approveChangeset", projectId, false), (grant) =>
            operate.run("approveChangeset", grant, { path, payload: { planHash: target.planHash ?? "" } }))
          : yield* Effect.flatMap(access.checkAs(principal, "rejectChangeset", projectId, false), (grant) =>
            operate.run("rejectChangeset", grant, { path, payload: { reason: "rejected in Slack" } }))
        return { changeset: encodeChangeset(changeset), status: changeset.status }
      })

    /** The message after the decision: the change as it stands now, the outcome on top, buttons only while it still waits. */
    const outcomeMessage = (
      outcome: { readonly status: string; readonly action?: unknown; readonly changeset?: unknown },
      target: ButtonTarget,
      name: string,
      approve: boolean
    ) =>
      Effect.gen(function*() {
        const waiting = outcome.status === "proposed" || outcome.status === "queued"
        const isAction = target.actionId !== undefined
        const type = waiting
          ? (isAction ? "action.proposed" : "changeset.queued")
          : `${isAction ? "action" : "changeset"}.${approve ? "approved" : "rejected"}`
        const note = waiting
          ? `Approved once by ${name}: this high-risk change needs a second person`
          : approve
          ? `Approved by ${name} in Slack (now ${outcome.status})`
          : `Rejected by ${name} in Slack`
        const body = { type, projectId: target.projectId, eventId: "", data: isAction ? { action: outcome.action } : { changeset: outcome.changeset } }
        const known = yield* facts.forBodies([body])
        return { replace_original: true, ...slackAppMessage(body, facts.publicUrl, known[0]!, note) }
      })

    const answer = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        if (request.method !== "POST") return HttpServerResponse.empty({ status: 405, headers: { allow: "POST" } })
        const read = yield* Effect.either(readJsonText(request))
        if (Either.isLeft(read)) return HttpServerResponse.unsafeJson({ error: { code: "invalid_request", message: read.left.error.message } }, { status: 400 })
        const raw = read.right
        const verified = yield* Effect.either(
          secrets.verify(raw, request.headers["x-slack-request-timestamp"], request.headers["x-slack-signature"])
        )
        if (Either.isLeft(verified)) return refused(verified.left)
        const orgId = verified.right
        // Signed by Slack from here on: what it sends is read.
        const interaction = decodeInteraction(new URLSearchParams(raw).get("payload") ?? "")
        if (Option.isNone(interaction) || interaction.value.type !== "block_actions") return HttpServerResponse.empty({ status: 200 })
        const { user, response_url: responseUrl, actions } = interaction.value
        const tapped = (actions ?? []).find((a) => a.action_id === APPROVE || a.action_id === REJECT)
        const target = tapped === undefined ? Option.none() : decodeTarget(tapped.value ?? "")
        if (tapped === undefined || Option.isNone(target)) return HttpServerResponse.empty({ status: 200 })
        const person = yield* people.findBySlackUser(orgId, user.id)
        if (Option.isNone(person)) {
          yield* reply(responseUrl, toTapper(
            `acs does not know your Slack user (${user.id}). Link it in the acs console (Password page → Slack user) or ask an admin to; then tap again.`
          ))
          return HttpServerResponse.empty({ status: 200 })
        }
        const principal = personPrincipal(person.value, null)
        const approve = tapped.action_id === APPROVE
        const decided = yield* Effect.either(decide(principal, approve, target.value).pipe(
          Effect.catchAllCause((cause) =>
            Effect.flatMap(toDeclaredError(cause), Option.match({ onNone: () => Effect.interrupt, onSome: (e) => Effect.fail(e) })))
        ))
        if (Either.isLeft(decided)) {
          yield* Effect.logInfo("Slack decision refused").pipe(Effect.annotateLogs({ personId: person.value.personId, code: decided.left._tag }))
          yield* reply(responseUrl, toTapper(refusalWords(decided.left, person.value.role)))
        } else {
          yield* reply(responseUrl, yield* outcomeMessage(decided.right, target.value, person.value.name, approve))
        }
        return HttpServerResponse.empty({ status: 200 })
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.zipRight(Effect.logError("Slack interaction failed", cause), Effect.succeed(HttpServerResponse.empty({ status: 500 }))))
      )

    return { answer } as const
  }),
  dependencies: [SlackSigningSecrets.Default, SlackAppFacts.Default]
}) {}

export const withSlack = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | SlackInteractions> =>
      pathOf(request.url) === SLACK_INTERACTIONS_PATH
        ? Effect.flatMap(SlackInteractions, (slack) => slack.answer(request)).pipe(Effect.withSpan("slack.interaction"))
        : app
  )
