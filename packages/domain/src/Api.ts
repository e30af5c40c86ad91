/**
 * The REST API, declared once. The server implements it, `HttpApiClient` derives a typed client from it
 * and the OpenAPI document is generated from it. Endpoint names are the operation names of Operations.ts.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Account, AccountList, AccountWithFreshness } from "./Accounts.ts"
import {
  ActionList,
  ActionRecord,
  ApprovalList,
  ApprovalParams,
  LedgerParams,
  PolicyDocument,
  PreviewParams,
  ProposalPreview,
  ProposalResponse,
  RejectRequest,
  Targets
} from "./Actions.ts"
import { ApiKey, CreateAccountKeyRequest, CreatedKey, CreateKeyRequest, RevokedKeys } from "./ApiKeys.ts"
import { Audit } from "./Audits.ts"
import { Brief, UpdateBriefRequest } from "./Brief.ts"
import {
  AddMembersRequest,
  AddMembersResponse,
  ApproveChangesetRequest,
  Changeset,
  ChangesetDetail,
  ChangesetList,
  ChangesetListParams,
  ChangesetRevert,
  OpenChangesetRequest,
  RejectChangesetRequest,
  RevertChangesetRequest,
  RevertPlan
} from "./Changesets.ts"
import { Connection, ConnectionKeyPair, ConnectionRequest, Discovery, ImportRequest } from "./Connection.ts"
import { VerdictSummary, VerdictsParams } from "./Guard.ts"
import { Guardrails, GuardrailsSettings } from "./Guardrails.ts"
import {
  AccountMismatchBody,
  BidStrategyConflictBody,
  ConflictBody,
  ConnectionErrorBody,
  DatabaseUnavailableBody,
  ForbiddenScopeBody,
  InternalBody,
  InvalidRequestBody,
  NoOpBody,
  NotFoundBody,
  NotRevertibleBody,
  RateLimitedBody,
  ReadOnlyAccountBody,
  SyncInProgressBody,
  UnauthorizedBody,
  UpstreamErrorBody,
  UpstreamUnavailableBody,
  ValidationFailedBody
} from "./Errors.ts"
import { EventList, EventsParams, EventStreamHeaders, EventStreamParams } from "./Events.ts"
import { jsonObject } from "./Json.ts"
import { CreatedPerson, CreatePersonRequest, NewPassword, Person, PersonList, UpdatePersonRequest } from "./People.ts"
import { LinkSlackUserRequest, SetSlackSigningSecretRequest, SlackIntegration } from "./Slack.ts"
import { OAuthConsentAnswer, OAuthConsentRequest } from "./OAuth.ts"
import { Plan, PlanParams } from "./Plan.ts"
import { RecommendationList, RecommendationsParams } from "./Recommendations.ts"
import { type KindDeclaration, type ProposalKind, proposalKinds } from "./ProposalKinds.ts"
import { CurrentPrincipal, Principal } from "./Principal.ts"
import {
  AppSearch,
  AppSearchRequest,
  GeoSearch,
  GeoSearchRequest,
  KeywordIdeas,
  KeywordIdeasRequest,
  Report,
  ReportRequest
} from "./Research.ts"
import { Settings, UpdateSettingsRequest } from "./Settings.ts"
import { CreatedWebhook, CreateWebhookRequest, Delivery, DeliveryList, DeliveryParams, Webhook, WebhookList } from "./Webhooks.ts"
import {
  AdGroupRow,
  AdRow,
  CampaignRow,
  collection,
  KeywordRow,
  NegativeKeywordRow,
  ReadParams,
  SearchTermRow,
  Sync,
  SyncHistoryParams,
  SyncList,
  SyncQueue
} from "./Warehouse.ts"

export const SESSION_COOKIE = "acs_session"

export const bearerSecurity = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "An API key: `Authorization: Bearer acs_…`")
)
export const sessionSecurity = HttpApiSecurity.apiKey({ in: "cookie", key: SESSION_COOKIE }).pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "A person's session cookie, set by POST /auth/login")
)

/** Resolves the caller from a Bearer key or a session cookie; anything else is 401 `unauthorized`. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: UnauthorizedBody,
  provides: CurrentPrincipal,
  security: { bearer: bearerSecurity, session: sessionSecurity }
}) {}

/**
 * What every group of operations shares: the caller resolved by `Authentication`, the refusals any
 * operation can meet (scope or grant, account reach, rate limit), and the `/api/v1` prefix. Piped after a
 * group's endpoints; errors a group adds after it follow these in the document.
 */
const authenticatedGroup = <Id extends string, Endpoints extends HttpApiEndpoint.HttpApiEndpoint.Any, E, R>(
  group: HttpApiGroup.HttpApiGroup<Id, Endpoints, E, R, false>
) =>
  group
    .middleware(Authentication)
    .addError(ForbiddenScopeBody)
    .addError(AccountMismatchBody)
    .addError(RateLimitedBody)
    .prefix("/api/v1")

const projectId = HttpApiSchema.param("projectId", Schema.String.annotations({
  description: "Account's projectId, or `current`"
}))

const Credentials = Schema.Struct({
  email: Schema.String.pipe(Schema.maxLength(320)),
  password: Schema.String.pipe(Schema.maxLength(1024))
}).annotations({ identifier: "LoginRequest" })

export class PublicAuthGroup extends HttpApiGroup.make("publicAuth")
  .add(
    HttpApiEndpoint.post("login", "/auth/login")
      .setPayload(Credentials)
      .addSuccess(Schema.Struct({ principal: Principal }))
      .addError(UnauthorizedBody)
      .annotate(OpenApi.Summary, "Sign a person in")
      .annotate(OpenApi.Description, "Sign a person in; sets an HttpOnly, SameSite=Strict session cookie.")
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Title, "Sign in")
  .annotate(
    OpenApi.Description,
    "Signing a person in with email and password; the session cookie then authenticates the other " +
    "operations."
  )
{}

/** A person's new password: the password rule (People.ts `NewPassword`) is the server's, answered 422. */
export const ChangePasswordRequest = Schema.Struct({
  currentPassword: Schema.String.pipe(Schema.maxLength(1024)),
  newPassword: NewPassword
}).annotations({ identifier: "ChangePasswordRequest" })

export class AuthGroup extends HttpApiGroup.make("auth")
  .add(HttpApiEndpoint.post("logout", "/auth/logout").addSuccess(HttpApiSchema.NoContent))
  .add(HttpApiEndpoint.get("getMe", "/auth/me").addSuccess(Schema.Struct({ principal: Principal })))
  .add(
    HttpApiEndpoint.post("changePassword", "/auth/password")
      .setPayload(ChangePasswordRequest)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(ValidationFailedBody)
      .annotate(OpenApi.Summary, "Change the signed-in person's password")
      .annotate(
        OpenApi.Description,
        "A person changes their own password: 204; every other session of that person ends, and this one " +
          "continues with a new cookie. A `newPassword` shorter than 12 characters or among the common passwords is 422 " +
          "`validation_failed` naming it; a wrong `currentPassword` is 422 `validation_failed`, and after 5 attempts in 15 " +
          "minutes for the person (whatever the session) 429 `rate_limited` with `Retry-After`; an API key is 400."
      )
  )
  .add(
    HttpApiEndpoint.put("linkSlackUser", "/auth/slack-user")
      .setPayload(LinkSlackUserRequest)
      .addSuccess(Person)
      .addError(ConflictBody)
      .annotate(
        OpenApi.Description,
        "A person links their own Slack user, so Approve and Reject in Slack act as them (docs/contract.md 6.1); 409 when " +
          "another person of the workspace has it; an API key is 400."
      )
  )
  .add(
    HttpApiEndpoint.post("authorizeOAuthClient", "/auth/oauth/consent")
      .setPayload(OAuthConsentRequest)
      .addSuccess(OAuthConsentAnswer)
      .annotate(OpenApi.Summary, "Consent to a remote MCP client (OAuth)")
      .annotate(
        OpenApi.Description,
        "The console's consent page: a signed-in person approves a registered client for `read` or `write` on the " +
          "accounts they choose (never the approval grant), or denies it; the answer is where the browser goes, the " +
          "client's exact redirect URI with a one-time code or `error=access_denied`. An unknown client or a " +
          "redirect URI it did not register is 400 and redirects nowhere; an API key is 400."
      )
  )
  .add(
    HttpApiEndpoint.get("listMyKeys", "/auth/keys")
      .addSuccess(Schema.Struct({ keys: Schema.Array(ApiKey), total: Schema.Int, truncated: Schema.Boolean }))
      .annotate(OpenApi.Summary, "The signed-in person's own keys")
      .annotate(
        OpenApi.Description,
        "Every key that answers to the signed-in person (root: that person), revoked ones too: the apps they connected " +
          "with OAuth, and keys they or their keys made. Whatever their role. An API key is 400."
      )
  )
  .add(
    HttpApiEndpoint.del("revokeMyKey")`/auth/keys/${HttpApiSchema.param("keyId", Schema.String)}`
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Revoke one of the signed-in person's own keys")
      .annotate(
        OpenApi.Description,
        "A person ends a key that answers to them (a connected app's included): 204, refused from its next request on " +
          "every instance. A key that is not theirs is 404; an API key is 400."
      )
  )
  .pipe(authenticatedGroup)
  .annotate(
    OpenApi.Description,
    "The caller: who it is (key or person, scope, grant, binding), ending a person's session, " +
    "changing a person's password, a person's consent to a remote MCP client, and a person's own keys."
  )
{}

export class KeysGroup extends HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.post("createKey", "/keys")
      .setPayload(CreateKeyRequest)
      .addSuccess(CreatedKey, { status: 201 })
  )
  .add(
    HttpApiEndpoint.get("listKeys", "/keys")
      .addSuccess(Schema.Struct({ keys: Schema.Array(ApiKey), total: Schema.Int, truncated: Schema.Boolean }))
  )
  .add(
    HttpApiEndpoint.del("revokeKey")`/keys/${HttpApiSchema.param("keyId", Schema.String)}`
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.post("createAccountKey")`/accounts/${projectId}/keys`
      .setPayload(CreateAccountKeyRequest)
      .addSuccess(CreatedKey, { status: 201 })
  )
  .pipe(authenticatedGroup)
  .annotate(
    OpenApi.Description,
    "API keys: org-wide, org-subset and account-bound keys; created, listed and revoked by admins."
  )
{}

/** The people of the workspace, managed by admins: add, set a role, disable. */
export class PeopleGroup extends HttpApiGroup.make("people")
  .add(HttpApiEndpoint.get("listPeople", "/people").addSuccess(PersonList))
  .add(
    HttpApiEndpoint.post("createPerson", "/people")
      .setPayload(CreatePersonRequest)
      .addSuccess(CreatedPerson, { status: 201 })
      .addError(ConflictBody)
      .addError(ValidationFailedBody)
      .annotate(
        OpenApi.Description,
        "Adds a person who signs in with email and password; without `password` one is generated and answered once. 409 when the " +
          "email is taken; 422 `validation_failed` naming `password` when it is shorter than 12 characters or a common password."
      )
  )
  .add(
    HttpApiEndpoint.put("updatePerson")`/people/${HttpApiSchema.param("personId", Schema.String)}`
      .setPayload(UpdatePersonRequest)
      .addSuccess(Person)
      .addError(NotFoundBody)
      .addError(ConflictBody)
      .annotate(
        OpenApi.Description,
        "Sets a person's role, or disables (`disabled: true`, which ends their sessions at once) or enables them. 409 for one's own " +
          "role or account, and for the workspace's last active admin. A person's keys act with at most their current role, " +
          "and not at all while they are disabled."
      )
  )
  .add(
    HttpApiEndpoint.post("revokePersonKeys")`/people/${HttpApiSchema.param("personId", Schema.String)}/keys/revoke`
      .addSuccess(RevokedKeys)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Revoke every key of a person")
      .annotate(
        OpenApi.Description,
        "Revokes every live API key rooted at the person: made by them, or by a key of theirs at any depth. Every " +
          "instance refuses them from the next request. Org keys (the bootstrap key, `acs keys create`) are nobody's."
      )
  )
  .pipe(authenticatedGroup)
  .annotate(OpenApi.Description, "The people who sign in to the console, their roles, disabling them, and revoking their keys; admins only.")
{}

export class SettingsGroup extends HttpApiGroup.make("settings")
  .add(HttpApiEndpoint.get("getSettings", "/settings").addSuccess(Settings))
  .add(HttpApiEndpoint.put("updateSettings", "/settings").setPayload(UpdateSettingsRequest).addSuccess(Settings))
  .add(HttpApiEndpoint.get("getSlackIntegration", "/settings/slack").addSuccess(SlackIntegration))
  .add(
    HttpApiEndpoint.put("setSlackSigningSecret", "/settings/slack/signing-secret")
      .setPayload(SetSlackSigningSecretRequest)
      .addSuccess(SlackIntegration)
      .annotate(
        OpenApi.Description,
        "Sets the Slack app's signing secret: Slack's interactions (Approve, Reject) are verified with it. Sealed at rest, never " +
          "answered: the answer says only that it is set (docs/contract.md 6.1)."
      )
  )
  .pipe(authenticatedGroup)
  .annotate(OpenApi.Description, "The org settings, among them the kill switch that stops every apply.")
{}

export class AccountsGroup extends HttpApiGroup.make("accounts")
  .add(HttpApiEndpoint.get("listAccounts", "/accounts").addSuccess(AccountList))
  .add(HttpApiEndpoint.get("getAccount")`/accounts/${projectId}`.addSuccess(AccountWithFreshness))
  .add(
    HttpApiEndpoint.post("importAccounts", "/accounts/import")
      .setPayload(ImportRequest)
      .addSuccess(Schema.Struct({ accounts: Schema.Array(Account) }), { status: 201 })
      .addError(ConnectionErrorBody)
      .addError(ReadOnlyAccountBody)
      .addError(UpstreamErrorBody)
      .addError(UpstreamUnavailableBody)
  )
  .pipe(authenticatedGroup)
  .annotate(
    OpenApi.Description,
    "The workspace's accounts (projects) with their data freshness, and importing them from the " +
    "upstream."
  )
{}

export class ConnectionGroup extends HttpApiGroup.make("connection")
  .add(HttpApiEndpoint.get("getConnection", "/connection").addSuccess(Connection))
  .add(
    HttpApiEndpoint.put("updateConnection", "/connection")
      .setPayload(ConnectionRequest)
      .addSuccess(Connection)
      .addError(ConnectionErrorBody)
      .addError(ReadOnlyAccountBody)
      .addError(UpstreamErrorBody)
      .addError(UpstreamUnavailableBody)
  )
  .add(HttpApiEndpoint.post("createConnectionKeyPair", "/connection/keypair").addSuccess(ConnectionKeyPair, { status: 201 }))
  .add(
    HttpApiEndpoint.post("discoverAccounts", "/connection/discover")
      .addSuccess(Discovery)
      .addError(ConnectionErrorBody)
      .addError(ReadOnlyAccountBody)
      .addError(UpstreamErrorBody)
      .addError(UpstreamUnavailableBody)
  )
  .pipe(authenticatedGroup)
  .annotate(
    OpenApi.Description,
    "The upstream (Apple Ads API) connection: credentials tested before they are stored, the key " +
    "pair of an API client, and the accounts the credentials reach."
  )
{}

const readParams = ReadParams

export class WarehouseGroup extends HttpApiGroup.make("warehouse")
  .add(HttpApiEndpoint.get("listCampaigns")`/accounts/${projectId}/campaigns`.setUrlParams(readParams)
    .addSuccess(collection("campaigns", CampaignRow)))
  .add(HttpApiEndpoint.get("listAdGroups")`/accounts/${projectId}/ad-groups`.setUrlParams(readParams)
    .addSuccess(collection("adGroups", AdGroupRow)))
  .add(HttpApiEndpoint.get("listKeywords")`/accounts/${projectId}/keywords`.setUrlParams(readParams)
    .addSuccess(collection("keywords", KeywordRow)))
  .add(HttpApiEndpoint.get("listSearchTerms")`/accounts/${projectId}/search-terms`.setUrlParams(readParams)
    .addSuccess(collection("searchTerms", SearchTermRow)))
  .add(HttpApiEndpoint.get("listAds")`/accounts/${projectId}/ads`.setUrlParams(readParams)
    .addSuccess(collection("ads", AdRow)))
  .add(HttpApiEndpoint.get("listNegativeKeywords")`/accounts/${projectId}/negative-keywords`.setUrlParams(readParams)
    .addSuccess(collection("negativeKeywords", NegativeKeywordRow)))
  .add(HttpApiEndpoint.get("listSyncs")`/accounts/${projectId}/syncs`.setUrlParams(SyncHistoryParams).addSuccess(SyncList))
  .add(HttpApiEndpoint.get("getSync")`/accounts/${projectId}/syncs/${HttpApiSchema.param("syncId", Schema.String.annotations({ description: "Sync id" }))}`
    .addSuccess(Sync).addError(NotFoundBody))
  .add(
    HttpApiEndpoint.post("startSync")`/accounts/${projectId}/syncs`
      .addSuccess(Sync, { status: 202 })
      .addError(SyncInProgressBody)
      .addError(ConnectionErrorBody)
      .addError(ReadOnlyAccountBody)
      .addError(UpstreamErrorBody)
      .addError(UpstreamUnavailableBody)
  )
  .add(HttpApiEndpoint.get("getSyncQueue", "/sync-queue").addSuccess(SyncQueue))
  .pipe(authenticatedGroup)
  .annotate(
    OpenApi.Description,
    "Reads of the synced warehouse, ranked by spend over a window of days, the syncs that fill " +
    "it, and the queue of scheduled syncs."
  )
{}

/** `Idempotency-Key`: 1–255 printable ASCII characters (docs/contract.md 4). */
export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(
    Schema.String.pipe(Schema.pattern(/^[\x20-\x7e]{1,255}$/, {
      message: () => "Idempotency-Key must be 1 to 255 printable ASCII characters"
    }))
  )
})

/** One proposal endpoint, generated from its kind declaration. */
const proposalEndpoint = <const Operation extends string, Body extends Schema.Schema.AnyNoContext>(
  kind: KindDeclaration<string, Operation, Body>
) =>
  HttpApiEndpoint.post(kind.operation, `/accounts/:projectId/actions/${kind.path}`)
    .setPath(Schema.Struct({ projectId }))
    .setPayload(kind.body)
    .setUrlParams(PreviewParams)
    .setHeaders(IdempotencyHeaders)
    // First the proposal (201), then the preview (200): the answer is encoded as the first that fits it,
    // and only a proposal has an `actionId`.
    .addSuccess(ProposalResponse, { status: 201 })
    .addSuccess(ProposalPreview)
    .addError(ValidationFailedBody)
    .addError(BidStrategyConflictBody)
    .addError(NoOpBody)
    .addError(ConflictBody)
    .addError(ReadOnlyAccountBody)
    .annotate(
      OpenApi.Description,
      `${kind.title}. Answers 201 with \`Location\`; a replay of the same \`Idempotency-Key\` answers 200 with ` +
        "`Idempotency-Replay: true` and `replayed: true`. With `?preview=true` it only validates and runs the policy: " +
        "200 with `{kind, mode, riskTier, policyReasons, summary, payload}`, nothing written, counted as a read."
    )

/** Each proposal endpoint with its own kind's body type. */
type ProposalEndpoints = {
  [K in ProposalKind as K["operation"]]: ReturnType<typeof proposalEndpoint<K["operation"], K["body"]>>
}[ProposalKind["operation"]]

/**
 * The proposal endpoints, one per kind of `proposalKinds`. They are added in a loop, which the compiler
 * cannot follow; the group's type is stated from the same declarations instead.
 */
export class ProposalsGroup extends (proposalKinds.reduce(
  (group, kind: KindDeclaration<string, string, Schema.Schema.AnyNoContext>) => group.add(proposalEndpoint(kind)),
  HttpApiGroup.make("proposals") as HttpApiGroup.HttpApiGroup<"proposals", HttpApiEndpoint.HttpApiEndpoint.Any, never, never, false>
) as unknown as HttpApiGroup.HttpApiGroup<"proposals", ProposalEndpoints, never, never, false>)
  .pipe(authenticatedGroup)
  .annotate(
    OpenApi.Description,
    "Proposing a change, one endpoint per kind. A proposal is validated, recorded in the ledger as " +
    "an action, then applied at once or queued for a human decision, as the account's policy and the " +
    "caller's credentials decide."
  )
{}

const actionId = HttpApiSchema.param("actionId", Schema.String.annotations({ description: "acs action id" }))

export class ActionsGroup extends HttpApiGroup.make("actions")
  .add(HttpApiEndpoint.get("listActions")`/accounts/${projectId}/actions`.setUrlParams(LedgerParams).addSuccess(ActionList))
  .add(HttpApiEndpoint.get("getAction")`/accounts/${projectId}/actions/${actionId}`.addSuccess(ActionRecord))
  .add(HttpApiEndpoint.get("listApprovals")`/accounts/${projectId}/approvals`.setUrlParams(ApprovalParams)
    .addSuccess(ApprovalList))
  .add(HttpApiEndpoint.post("approveAction")`/accounts/${projectId}/approvals/${actionId}/approve`
    .addSuccess(ActionRecord).addError(ConflictBody).addError(ValidationFailedBody))
  .add(HttpApiEndpoint.post("rejectAction")`/accounts/${projectId}/approvals/${actionId}/reject`
    .setPayload(RejectRequest).addSuccess(ActionRecord).addError(ConflictBody))
  .add(HttpApiEndpoint.post("revertAction")`/accounts/${projectId}/actions/${actionId}/revert`
    .setUrlParams(PreviewParams)
    // First the revert (201), then its preview (200): only the revert's answer has an `actionId`.
    .addSuccess(ProposalResponse, { status: 201 })
    .addSuccess(ProposalPreview)
    .addError(NotRevertibleBody)
    .annotate(
      OpenApi.Description,
      "Applies the action's compensating change at once, or queues it for review when the entity changed since. " +
        "`?preview=true`: the revert's checks and what it would write, nothing recorded."
    )
    .addError(ConflictBody)
    .addError(ReadOnlyAccountBody)
    .addError(ConnectionErrorBody)
    .addError(UpstreamErrorBody)
    .addError(UpstreamUnavailableBody))
  .add(HttpApiEndpoint.get("getPolicy")`/accounts/${projectId}/policy`.addSuccess(PolicyDocument))
  .add(HttpApiEndpoint.get("getTargets")`/accounts/${projectId}/targets`.addSuccess(Targets))
  .add(HttpApiEndpoint.put("updateTargets")`/accounts/${projectId}/targets`.setPayload(Targets).addSuccess(Targets))
  .add(HttpApiEndpoint.get("getGuardrails")`/accounts/${projectId}/guardrails`.addSuccess(Guardrails))
  .add(HttpApiEndpoint.put("updateGuardrails")`/accounts/${projectId}/guardrails`.setPayload(GuardrailsSettings).addSuccess(Guardrails))
  .add(HttpApiEndpoint.del("resumeAutoApply")`/accounts/${projectId}/guardrails/pause`.addSuccess(Guardrails))
  .add(HttpApiEndpoint.get("getVerdicts")`/accounts/${projectId}/verdicts`.setUrlParams(VerdictsParams).addSuccess(VerdictSummary)
    .annotate(
      OpenApi.Description,
      "The guard's verdicts on the changes applied in the window: in total, by kind and by proposer. A changeset " +
        "counts once, as kind `changeset` and under its opener."
    ))
  .pipe(authenticatedGroup)
  .annotate(
    OpenApi.Description,
    "The change ledger: actions and their records, approvals (approve, reject), reverts, the guard's verdicts, " +
    "the safe-apply policy, the account's guardrails and the CPA target band."
  )
{}

const changesetId = HttpApiSchema.param("changesetId", Schema.String.annotations({ description: "Changeset id" }))

export class ChangesetsGroup extends HttpApiGroup.make("changesets")
  .add(HttpApiEndpoint.post("openChangeset")`/accounts/${projectId}/changesets`
    .setPayload(OpenChangesetRequest).addSuccess(Changeset, { status: 201 }).addError(ReadOnlyAccountBody))
  .add(HttpApiEndpoint.post("addChangesetMembers")`/accounts/${projectId}/changesets/${changesetId}/members`
    .setPayload(AddMembersRequest)
    .addSuccess(AddMembersResponse, { status: 207 })
    .addError(ConflictBody)
    .addError(ReadOnlyAccountBody)
    .annotate(
      OpenApi.Description,
      "Each proposal is validated and recorded as a member on its own: the answer (207) says, per proposal, its " +
        "member or its refusal (the status and error its own proposal endpoint would have answered)."
    ))
  .add(HttpApiEndpoint.post("submitChangeset")`/accounts/${projectId}/changesets/${changesetId}/submit`
    .setUrlParams(PreviewParams)
    .addSuccess(Changeset)
    .addError(ConflictBody)
    .addError(ValidationFailedBody)
    .annotate(
      OpenApi.Description,
      "Freezes the plan (order, dependencies), its hash and impact, and the policy's decision for the whole: it " +
        "auto-applies only when every member would and all fit the 24-hour window, else it queues as one item. " +
        "`?preview=true`: the same answer, nothing frozen."
    ))
  .add(HttpApiEndpoint.post("approveChangeset")`/accounts/${projectId}/changesets/${changesetId}/approve`
    .setPayload(ApproveChangesetRequest)
    .addSuccess(Changeset)
    .addError(ConflictBody)
    .addError(ValidationFailedBody)
    .annotate(
      OpenApi.Description,
      "Approves the plan the hash names. 409 `conflict` with `reason: state_changed_since_proposal` and the " +
        "members that moved when the account changed under the plan: resubmit to refresh it."
    ))
  .add(HttpApiEndpoint.post("rejectChangeset")`/accounts/${projectId}/changesets/${changesetId}/reject`
    .setPayload(RejectChangesetRequest).addSuccess(Changeset).addError(ConflictBody))
  .add(HttpApiEndpoint.post("revertChangeset")`/accounts/${projectId}/changesets/${changesetId}/revert`
    .setUrlParams(PreviewParams)
    .setPayload(RevertChangesetRequest)
    // First the revert (201), then its preview (200): only the revert's answer has a `changeset`.
    .addSuccess(ChangesetRevert, { status: 201 })
    .addSuccess(RevertPlan)
    .addError(NotRevertibleBody)
    .addError(ConflictBody)
    .addError(ReadOnlyAccountBody)
    .addError(ConnectionErrorBody)
    .addError(UpstreamErrorBody)
    .addError(UpstreamUnavailableBody)
    .annotate(
      OpenApi.Description,
      "Undoes the changeset as one compensating changeset, applied at once. Each member is checked three ways " +
        "(its prior state, what acs wrote, what is upstream now): `revertible`, `conflicted` (moved since: left " +
        "alone unless listed in `force`) or `not_revertible`. `?preview=true`: the revert plan, nothing written."
    ))
  .add(HttpApiEndpoint.get("listChangesets")`/accounts/${projectId}/changesets`
    .setUrlParams(ChangesetListParams).addSuccess(ChangesetList))
  .add(HttpApiEndpoint.get("getChangeset")`/accounts/${projectId}/changesets/${changesetId}`.addSuccess(ChangesetDetail))
  .pipe(authenticatedGroup)
  .annotate(
    OpenApi.Description,
    "Changesets: proposals grouped into one unit with one plan, one decision, one apply in order and one revert."
  )
{}

/** What acs suggests and finds about an account, and the operator's brief. */
export class InsightsGroup extends HttpApiGroup.make("insights")
  .add(HttpApiEndpoint.get("getPlan")`/accounts/${projectId}/plan`.setUrlParams(PlanParams).addSuccess(Plan)
    .annotate(OpenApi.Description, "Suggested changes ranked by spend at stake; each `proposal.body` can be POSTed as is to `proposal.path`."))
  .add(HttpApiEndpoint.get("listRecommendations")`/accounts/${projectId}/recommendations`.setUrlParams(RecommendationsParams)
    .addSuccess(RecommendationList)
    .annotate(
      OpenApi.Description,
      "Apple's recommendations (daily cap, target CPA) as last synced, with their expected effect and expiry; act on " +
        "one with the apply-recommendation or dismiss-recommendation proposal."
    ))
  .add(HttpApiEndpoint.post("runAudit")`/accounts/${projectId}/audits`.addSuccess(Audit, { status: 201 }))
  .add(HttpApiEndpoint.get("getAudit")`/accounts/${projectId}/audits/${HttpApiSchema.param("auditId", Schema.String.annotations({ description: "Audit id" }))}`
    .addSuccess(Audit).addError(NotFoundBody))
  .add(HttpApiEndpoint.get("getBrief")`/accounts/${projectId}/brief`.addSuccess(Brief))
  .add(HttpApiEndpoint.put("updateBrief")`/accounts/${projectId}/brief`.setPayload(UpdateBriefRequest).addSuccess(Brief))
  .pipe(authenticatedGroup)
  .annotate(
    OpenApi.Description,
    "What acs suggests (the plan) and finds (audits) about an account, and the operator's brief."
  )
{}

/** Reads that go to the upstream (reports, app and geo search) or mine the warehouse (keyword ideas). */
export class ResearchGroup extends HttpApiGroup.make("research")
  .add(HttpApiEndpoint.post("runReport")`/accounts/${projectId}/reports`.setPayload(ReportRequest).addSuccess(Report)
    .annotate(OpenApi.Description, "A read-only POST: rows and paging straight from the upstream report."))
  .add(HttpApiEndpoint.post("searchApps", "/research/apps").setPayload(AppSearchRequest).addSuccess(AppSearch))
  .add(HttpApiEndpoint.post("searchGeo", "/research/geo").setPayload(GeoSearchRequest).addSuccess(GeoSearch))
  .add(HttpApiEndpoint.post("keywordIdeas", "/research/keyword-ideas").setPayload(KeywordIdeasRequest).addSuccess(KeywordIdeas))
  .pipe(authenticatedGroup)
  .addError(ConnectionErrorBody)
  .addError(ReadOnlyAccountBody)
  .addError(UpstreamErrorBody)
  .addError(UpstreamUnavailableBody)
  .annotate(
    OpenApi.Description,
    "Reads that go to the upstream (reports, app and geo search) or mine the warehouse (keyword " +
    "ideas)."
  )
{}

/** What happened in the org (docs/contract.md 6): a page of events, and the same events live. */
export class EventsGroup extends HttpApiGroup.make("events")
  .add(HttpApiEndpoint.get("listEvents", "/events").setUrlParams(EventsParams).addSuccess(EventList))
  .add(
    HttpApiEndpoint.get("streamEvents", "/events/stream")
      .setUrlParams(EventStreamParams)
      .setHeaders(EventStreamHeaders)
      .addSuccess(HttpApiSchema.Text({ contentType: "text/event-stream" }))
      .annotate(
        OpenApi.Description,
        "Server-Sent Events: each event as `id: <eventId>`, `event: <type>`, `data: <the event as JSON>`; a " +
          "`: heartbeat` comment every 15 s. Reconnect with `Last-Event-ID` to get every later event once. The " +
          "stream ends when the credential is revoked or expires (checked at each event and heartbeat)."
      )
  )
  .pipe(authenticatedGroup)
  .annotate(OpenApi.Description, "What happened in the org: action decisions and outcomes, outside changes, syncs, connections.")
{}

const webhookId = HttpApiSchema.param("webhookId", Schema.String)

/** Webhook endpoints (admin, org-level): signed POSTs of the org's events, retried for 24 h. */
export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(HttpApiEndpoint.post("createWebhook", "/webhooks").setPayload(CreateWebhookRequest).addSuccess(CreatedWebhook, { status: 201 })
    .addError(ValidationFailedBody))
  .add(HttpApiEndpoint.get("listWebhooks", "/webhooks").addSuccess(WebhookList))
  .add(HttpApiEndpoint.del("deleteWebhook")`/webhooks/${webhookId}`.addSuccess(HttpApiSchema.NoContent))
  .add(HttpApiEndpoint.post("testWebhook")`/webhooks/${webhookId}/test`.addSuccess(Delivery, { status: 202 }).addError(ConflictBody))
  .add(HttpApiEndpoint.post("enableWebhook")`/webhooks/${webhookId}/enable`.addSuccess(Webhook))
  .add(HttpApiEndpoint.get("listWebhookDeliveries")`/webhooks/${webhookId}/deliveries`.setUrlParams(DeliveryParams)
    .addSuccess(DeliveryList))
  .pipe(authenticatedGroup)
  .addError(NotFoundBody)
  .annotate(
    OpenApi.Description,
    "Webhook endpoints: each event the endpoint asked for is POSTed, signed with `Acs-Signature`, retried " +
      "with backoff for 24 h; an endpoint failing all that time is disabled until an admin enables it."
  )
{}

const Health = Schema.Struct({ status: Schema.Literal("ok") })
const Readiness = Schema.Struct({ status: Schema.Literal("ready"), database: Schema.Literal("ok") })

export class SystemGroup extends HttpApiGroup.make("system")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health)
    .annotate(OpenApi.Summary, "Liveness")
    .annotate(OpenApi.Description, "The process is up."))
  .add(HttpApiEndpoint.get("readyz", "/readyz").addSuccess(Readiness)
    .annotate(OpenApi.Summary, "Readiness")
    .annotate(OpenApi.Description, "The database answers and migrations are applied; 503 `database_unavailable` with `Retry-After` otherwise."))
  .add(HttpApiEndpoint.get("openapi", "/api/v1/openapi.json").addSuccess(jsonObject("An OpenAPI 3.1 document"))
    .annotate(OpenApi.Summary, "This OpenAPI document")
    .annotate(OpenApi.Description, "This document: OpenAPI 3.1, derived from the API's declaration."))
  .annotate(OpenApi.Description, "Liveness, readiness, this document and its browsable reference; no authentication.")
{}

/** Groups whose endpoints are not operations of an authenticated caller (liveness, docs, sign-in). */
export const unauthenticatedGroups: ReadonlyArray<string> = ["system", "publicAuth"]

export class Api extends HttpApi.make("acs")
  .add(SystemGroup)
  .add(PublicAuthGroup)
  .add(AuthGroup)
  .add(KeysGroup)
  .add(PeopleGroup)
  .add(SettingsGroup)
  .add(AccountsGroup)
  .add(ConnectionGroup)
  .add(WarehouseGroup)
  .add(ProposalsGroup)
  .add(ActionsGroup)
  .add(ChangesetsGroup)
  .add(InsightsGroup)
  .add(ResearchGroup)
  .add(EventsGroup)
  .add(WebhooksGroup)
  .addError(InvalidRequestBody)
  .addError(NotFoundBody)
  .addError(RateLimitedBody)
  .addError(InternalBody)
  .addError(DatabaseUnavailableBody)
  .annotate(OpenApi.Title, "acs — Ad-Account Change Service")
  .annotate(OpenApi.Version, "1.0.0")
  // The paths are absolute (`/healthz`, `/api/v1/…`) and a deployment's host is not known here: the server
  // is the one that served this document, which `/` says (OpenAPI's own default when `servers` is absent).
  .annotate(OpenApi.Servers, [{ url: "/", description: "The acs server that serves this document" }])
  .annotate(
    OpenApi.Description,
    "Safe, reviewable changes to Apple Search Ads accounts. Every failure has the envelope " +
    "`{\"error\": {\"code\", \"message\", …}}`; clients branch on `error.code`."
  )
{}
