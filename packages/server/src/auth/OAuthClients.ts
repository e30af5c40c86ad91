/**
 * OAuth clients registered dynamically (RFC 7591; docs/contract.md 5.5), this module owning `oauth_clients`.
 * Public clients only (`token_endpoint_auth_method: none`: a remote MCP client holds no secret; PKCE binds a code
 * to the client that asked for it). A redirect URI is https, or http on the loopback host, with no fragment, and
 * is kept exactly as registered: an authorization request must name it byte for byte
 * (docs/decisions/access-and-keys.md "OAuth redirect URIs").
 */
import { isId } from "@acs/domain/IdFormat"
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { newId } from "../db/Ids.ts"
import { columnsOf, decodeRows } from "../db/Rows.ts"
import { invalidClientMetadata, invalidRedirectUri, type OAuthFailure } from "./OAuthFailure.ts"

const ClientRow = Schema.Struct({
  clientId: Schema.String,
  clientName: Schema.String,
  redirectUris: Schema.Array(Schema.String),
  createdAt: Schema.String
})
export type OAuthClient = typeof ClientRow.Type

const clientColumns = columnsOf(ClientRow)
const decodeClients = decodeRows(ClientRow)

const LOOPBACK: ReadonlySet<string> = new Set(["localhost", "127.0.0.1", "[::1]"])
const MAX_REDIRECT_URIS = 10
const MAX_URI_LENGTH = 2000
// eslint-disable-next-line no-control-regex -- the characters refused
export const CONTROL = /[\u0000-\u001f\u007f]/

/** Why a redirect URI is not accepted; none when it is. */
export const redirectUriRefusal = (uri: string): Option.Option<string> => {
  if (uri.length > MAX_URI_LENGTH) return Option.some(`at most ${MAX_URI_LENGTH} characters`)
  if (CONTROL.test(uri)) return Option.some("no control characters")
  if (!URL.canParse(uri)) return Option.some("not an absolute URL")
  const url = new URL(uri)
  if (uri.includes("#")) return Option.some("a redirect URI has no fragment")
  if (url.username !== "" || url.password !== "") return Option.some("a redirect URI carries no credentials")
  if (url.protocol === "https:") return Option.none()
  if (url.protocol === "http:" && LOOPBACK.has(url.hostname)) return Option.none()
  return Option.some("must be https, or http on localhost, 127.0.0.1 or [::1]")
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const stringList = (value: unknown): Option.Option<ReadonlyArray<string>> =>
  Array.isArray(value) && value.every((v): v is string => typeof v === "string") ? Option.some(value) : Option.none()

/** The registration's metadata, checked: what is stored and answered, or the RFC 7591 refusal. */
const checkMetadata = (body: unknown): Effect.Effect<{ readonly clientName: string; readonly redirectUris: ReadonlyArray<string> }, OAuthFailure> =>
  Effect.gen(function*() {
    if (!isRecord(body)) return yield* invalidClientMetadata("the body is a JSON object of client metadata")
    const redirectUris = stringList(body["redirect_uris"])
    if (Option.isNone(redirectUris) || redirectUris.value.length === 0) {
      return yield* invalidRedirectUri("redirect_uris: a non-empty array of strings")
    }
    if (redirectUris.value.length > MAX_REDIRECT_URIS) return yield* invalidRedirectUri(`redirect_uris: at most ${MAX_REDIRECT_URIS}`)
    for (const uri of redirectUris.value) {
      const refused = redirectUriRefusal(uri)
      if (Option.isSome(refused)) return yield* invalidRedirectUri(`redirect_uris: ${JSON.stringify(uri.slice(0, 200))}: ${refused.value}`)
    }
    const method = body["token_endpoint_auth_method"]
    if (method !== undefined && method !== "none") {
      return yield* invalidClientMetadata("token_endpoint_auth_method: only \"none\" (public clients with PKCE)")
    }
    const grantTypes = body["grant_types"] === undefined ? Option.some([]) : stringList(body["grant_types"])
    if (Option.isNone(grantTypes) || grantTypes.value.some((g) => g !== "authorization_code" && g !== "refresh_token")) {
      return yield* invalidClientMetadata("grant_types: authorization_code and refresh_token only")
    }
    const responseTypes = body["response_types"] === undefined ? Option.some([]) : stringList(body["response_types"])
    if (Option.isNone(responseTypes) || responseTypes.value.some((r) => r !== "code")) {
      return yield* invalidClientMetadata("response_types: code only")
    }
    const name = body["client_name"]
    if (name !== undefined && (typeof name !== "string" || name.trim().length === 0 || name.length > 200 || CONTROL.test(name))) {
      return yield* invalidClientMetadata("client_name: 1 to 200 characters")
    }
    return { clientName: typeof name === "string" ? name.trim() : "Unnamed client", redirectUris: [...new Set(redirectUris.value)] }
  })

/** The registration answer (RFC 7591 §3.2.1). */
export const registrationOf = (client: OAuthClient) => ({
  client_id: client.clientId,
  client_id_issued_at: Math.floor(Date.parse(client.createdAt) / 1000),
  client_name: client.clientName,
  redirect_uris: client.redirectUris,
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none"
})

export class OAuthClients extends Effect.Service<OAuthClients>()("acs/OAuthClients", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const register = (body: unknown) =>
      Effect.gen(function*() {
        const metadata = yield* checkMetadata(body)
        const rows = yield* sql`
          INSERT INTO oauth_clients (client_id, client_name, redirect_uris)
          VALUES (${newId("ocl")}, ${metadata.clientName}, ${JSON.stringify(metadata.redirectUris)}::jsonb)
          RETURNING ${sql.unsafe(clientColumns)}`.pipe(Effect.orDie, Effect.flatMap(decodeClients))
        yield* Effect.logInfo("oauth client registered").pipe(Effect.annotateLogs({ clientId: rows[0]!.clientId }))
        return rows[0]!
      }).pipe(Effect.withSpan("OAuthClients.register"))

    const find = (clientId: string) =>
      !isId("ocl", clientId)
        ? Effect.succeed(Option.none<OAuthClient>())
        : sql`SELECT ${sql.unsafe(clientColumns)} FROM oauth_clients WHERE client_id = ${clientId}`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeClients),
          Effect.map((rows) => Option.fromNullable(rows[0]))
        )

    return { register, find } as const
  })
}) {}
