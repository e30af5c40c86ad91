/** A refused OAuth request, answered in RFC 6749 §5.2's shape `{error, error_description}` (docs/contract.md 5.5). */
import { Data } from "effect"

export class OAuthFailure extends Data.TaggedError("OAuthFailure")<{
  readonly error: string
  readonly description: string
  /** 400 for the most; 401 for `invalid_client`, 429 for a rate limit. */
  readonly status: number
  /** A body left partly unread: the connection is closed after the answer. */
  readonly closeConnection?: boolean
}> {}

export const invalidRequest = (description: string) => new OAuthFailure({ error: "invalid_request", description, status: 400 })
export const invalidGrant = (description: string) => new OAuthFailure({ error: "invalid_grant", description, status: 400 })
export const invalidClient = (description: string) => new OAuthFailure({ error: "invalid_client", description, status: 401 })
export const invalidClientMetadata = (description: string) =>
  new OAuthFailure({ error: "invalid_client_metadata", description, status: 400 })
export const invalidRedirectUri = (description: string) => new OAuthFailure({ error: "invalid_redirect_uri", description, status: 400 })
