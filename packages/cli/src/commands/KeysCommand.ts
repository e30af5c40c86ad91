/** `acs keys create|list|revoke`: API keys, made by an operator on the database (no principal needed). */
import { Accounts, boundProjects } from "@acs/server/accounts/Accounts"
import { KeyStore, type KeySpec } from "@acs/server/auth/KeyStore"
import { type ApiKey, CreateKeyRequest } from "@acs/domain/ApiKeys"
import { type Binding, ScopeSchema } from "@acs/domain/Principal"
import { Args, Command, Options } from "@effect/cli"
import { Clock, Effect, Option, Schema } from "effect"
import { AdminLive } from "../AdminLayer.ts"
import { parseIssues, UsageError } from "../CliError.ts"
import { resolveOrg } from "../Orgs.ts"
import { emit, renderRecord, renderTable } from "../Output.ts"
import { json, org } from "../SharedOptions.ts"

const flagOf: Record<string, string> = {
  name: "--name",
  scope: "--scope",
  canApprove: "--can-approve",
  projectIds: "--project",
  expiresAt: "--expires-at"
}

const decodeRequest = (request: unknown) =>
  Schema.decodeUnknown(CreateKeyRequest)(request, { errors: "all" }).pipe(
    Effect.mapError((error) =>
      new UsageError({
        message: parseIssues(error)
          .map((issue) => {
            const field = issue.path[0]
            const flag = typeof field === "string" ? flagOf[field] ?? field : undefined
            return flag === undefined ? issue.message : `${flag}: ${issue.message}`
          })
          .join("; ")
      })
    )
  )

const showBinding = (binding: Binding): string =>
  binding.kind === "org"
    ? "org"
    : binding.kind === "subset"
    ? `projects ${binding.projectIds.join(",")}`
    : `account ${binding.projectId}`

const keyFields = (key: ApiKey) =>
  [
    ["key id", key.keyId],
    ["name", key.name],
    ["scope", key.scope],
    ["can approve", key.canApprove ? "yes" : "no"],
    ["binding", showBinding(key.binding)],
    ["expires at", key.expiresAt ?? "never"],
    ["created at", key.createdAt]
  ] as const

const create = Command.make("create", {
  name: Options.text("name").pipe(Options.withDescription("what the key is for")),
  scope: Options.choice("scope", ScopeSchema.literals).pipe(Options.withDescription("read, write or admin")),
  canApprove: Options.boolean("can-approve").pipe(Options.withDescription("grant approve (approve, reject, revert)")),
  projects: Options.text("project").pipe(
    Options.withDescription("limit the key to this account (repeat for several); default: every account of the org"),
    Options.repeated
  ),
  account: Options.text("account").pipe(
    Options.withDescription("bind the key to this one account (`current` resolves to it)"),
    Options.optional
  ),
  expiresAt: Options.text("expires-at").pipe(
    Options.withDescription("ISO 8601 timestamp in the future, e.g. 2027-01-31T00:00:00Z; default: never"),
    Options.optional
  ),
  org,
  json
}, (input) =>
  Effect.gen(function*() {
    if (input.projects.length > 0 && Option.isSome(input.account)) {
      return yield* new UsageError({ message: "--project and --account exclude each other: a key has one binding" })
    }
    const request = yield* decodeRequest({
      name: input.name,
      scope: input.scope,
      canApprove: input.canApprove,
      ...(input.projects.length > 0 ? { projectIds: input.projects } : {}),
      ...(Option.isSome(input.expiresAt) ? { expiresAt: input.expiresAt.value } : {})
    })
    const now = yield* Clock.currentTimeMillis
    if (request.expiresAt !== undefined && Date.parse(request.expiresAt) <= now) {
      return yield* new UsageError({ message: `--expires-at: ${request.expiresAt} is not in the future` })
    }
    const orgId = yield* resolveOrg(input.org)

    const binding: Binding = Option.isSome(input.account)
      ? { kind: "account", projectId: input.account.value }
      : request.projectIds !== undefined
      ? { kind: "subset", projectIds: [...new Set(request.projectIds)] }
      : { kind: "org" }
    const projectIds = boundProjects(binding)
    const known = new Set(yield* (yield* Accounts).existing(orgId, projectIds))
    const unknown = projectIds.filter((id) => !known.has(id))
    if (unknown.length > 0) {
      return yield* new UsageError({
        message: `${Option.isSome(input.account) ? "--account" : "--project"}: no account ${unknown.join(", ")} in org ${orgId}`
      })
    }

    const spec: KeySpec = {
      name: request.name,
      scope: request.scope,
      canApprove: request.canApprove ?? false,
      binding,
      expiresAt: request.expiresAt ?? null
    }
    const created = yield* (yield* KeyStore).createAsOperator(orgId, spec)
    yield* emit(input.json, created, () =>
      [
        renderRecord([...keyFields(created.key), ["secret", created.secret]]),
        "",
        "The secret is shown only now: store it (send it as `Authorization: Bearer <secret>`)."
      ].join("\n"))
  }).pipe(Effect.provide(AdminLive))
).pipe(Command.withDescription("create an API key; its secret is printed once"))

const list = Command.make("list", { org, json }, (input) =>
  Effect.gen(function*() {
    const orgId = yield* resolveOrg(input.org)
    const keys = yield* (yield* KeyStore).listInOrg(orgId)
    yield* emit(input.json, { keys }, () =>
      renderTable([
        { header: "KEY ID", cell: (k) => k.keyId },
        { header: "NAME", cell: (k) => k.name },
        { header: "ANSWERS TO", cell: (k) => k.root.kind === "person" ? `person ${k.root.name}` : k.root.id === k.keyId ? "org key" : `org key ${k.root.id}` },
        // What the key may do now: its person's current role caps it, and a disabled person suspends it.
        { header: "SCOPE", cell: (k) => k.effective === null ? "suspended" : k.effective.scope === k.scope ? k.scope : `${k.effective.scope} (of ${k.scope})` },
        { header: "APPROVE", cell: (k) => k.effective?.canApprove === true ? "yes" : "" },
        { header: "BINDING", cell: (k) => showBinding(k.binding) },
        { header: "EXPIRES AT", cell: (k) => k.expiresAt },
        { header: "LAST USED AT", cell: (k) => k.lastUsedAt },
        { header: "REVOKED AT", cell: (k) => k.revokedAt },
        { header: "CREATED AT", cell: (k) => k.createdAt },
        // `oauth`: a remote MCP client's grant, its secret rotated on every refresh.
        { header: "KIND", cell: (k) => k.kind }
      ], keys))
  }).pipe(Effect.provide(AdminLive))
).pipe(Command.withDescription("list the org's API keys (never a secret)"))

const revoke = Command.make("revoke", {
  keyId: Args.text({ name: "keyId" }).pipe(Args.withDescription("the key to revoke")),
  org,
  json
}, (input) =>
  Effect.gen(function*() {
    const orgId = yield* resolveOrg(input.org)
    yield* (yield* KeyStore).revokeInOrg(orgId, input.keyId)
    yield* emit(input.json, { keyId: input.keyId, revoked: true }, () => `revoked ${input.keyId}`)
  }).pipe(Effect.provide(AdminLive))
).pipe(Command.withDescription("revoke an API key; every instance refuses it from its next request"))

export const keysCommand = Command.make("keys").pipe(
  Command.withDescription("API keys"),
  Command.withSubcommands([create, list, revoke])
)
