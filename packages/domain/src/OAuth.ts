/** A person's consent to a remote MCP client (docs/contract.md 5.5): what the console's consent page sends and answers. */
import { Schema } from "effect"

/** PKCE's challenge: base64url of a SHA-256 (43 characters), up to the verifier's 128. */
const CodeChallenge = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_-]{43,128}$/, { message: () => "codeChallenge: base64url, 43 to 128 characters" })
)

export const OAuthConsentRequest = Schema.Struct({
  clientId: Schema.String.pipe(Schema.maxLength(100)),
  redirectUri: Schema.String.pipe(Schema.maxLength(2000)).annotations({
    description: "One of the client's registered redirect URIs, exactly"
  }),
  codeChallenge: CodeChallenge,
  codeChallengeMethod: Schema.Literal("S256").annotations({ description: "PKCE: S256 only" }),
  state: Schema.optional(Schema.String.pipe(Schema.maxLength(2000))),
  resource: Schema.String.pipe(Schema.maxLength(2000)).annotations({
    description: "The protected resource (RFC 8707): this server's `/mcp` URL"
  }),
  decision: Schema.Literal("approve", "deny"),
  scope: Schema.Literal("read", "write").annotations({ description: "What the client's key may do; never the approval grant" }),
  projectIds: Schema.optional(Schema.Array(Schema.String).pipe(
    Schema.minItems(1, { message: () => "projectIds must list at least one account, or be left out for every account" })
  ))
}).annotations({ identifier: "OAuthConsentRequest" })
export type OAuthConsentRequest = typeof OAuthConsentRequest.Type

export const OAuthConsentAnswer = Schema.Struct({
  redirectTo: Schema.String.annotations({
    description: "Where the browser goes next: the client's redirect URI with `code` and `state`, or `error=access_denied`"
  })
}).annotations({ identifier: "OAuthConsentAnswer" })
