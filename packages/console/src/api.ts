/**
 * The console's only way to the API: the typed client derived from the HttpApi declaration the server
 * implements (`HttpApiClient.make(Api)`), over fetch with the person's session cookie. The session cookie
 * counts on an unsafe method only with `Content-Type: application/json`, body or not (the CSRF rule every
 * browser client meets), so every POST, PUT and DELETE says it. Every path parameter is encoded on its way in
 * (`encodingPaths`).
 */
import { Api } from "@acs/domain/Api"
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Either, ParseResult } from "effect"

const UNSAFE: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"])

const sameOriginJson = HttpClient.mapRequest((request) =>
  UNSAFE.has(request.method) && request.headers["content-type"] === undefined
    ? HttpClientRequest.setHeader(request, "content-type", "application/json")
    : request
)

const makeClient = HttpApiClient.make(Api, { baseUrl: window.location.origin, transformClient: sameOriginJson })

export type Client = Effect.Effect.Success<typeof makeClient>

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** A path parameter as it goes into the URL: encoded, and never empty or a dot segment (the URL would resolve it). */
const pathSegment = (value: unknown): string | undefined =>
  typeof value !== "string" || value === "" || value === "." || value === ".." ? undefined : encodeURIComponent(value)

/**
 * The typed client with every path parameter encoded. HttpApiClient puts parameters into the path as they are,
 * so an id holding `/`, `?`, `#` or `..` would send the request to another endpoint; one that cannot be a
 * segment at all is refused here, and nothing is sent.
 */
const encodingPaths = (typed: Client): Client =>
  new Proxy(typed, {
    get: (groups, group) => {
      const endpoints: unknown = Reflect.get(groups, group)
      if (!isRecord(endpoints)) return endpoints
      return new Proxy(endpoints, {
        get: (target, name) => {
          const endpoint: unknown = Reflect.get(target, name)
          if (typeof endpoint !== "function") return endpoint
          return (request: unknown) => {
            if (!isRecord(request) || !isRecord(request["path"])) return endpoint(request)
            const path = Object.entries(request["path"]).map(([key, value]) => [key, pathSegment(value)] as const)
            const refused = path.find(([, value]) => value === undefined)
            if (refused !== undefined) {
              return Effect.fail({ error: { code: "not_found", message: `${refused[0]}: not an id of acs` } })
            }
            return endpoint({ ...request, path: Object.fromEntries(path) })
          }
        }
      })
    }
  })

const client: Promise<Client> = Effect.runPromise(makeClient.pipe(Effect.provide(FetchHttpClient.layer), Effect.map(encodingPaths)))

/** What a refusal says: the SPEC envelope's code and message, or the failure's own message. */
export interface ApiFailure {
  readonly code: string
  readonly message: string
  readonly requiredGrant?: string
  /** Why a conflict: `state_changed_since_proposal` when the account moved under a changeset's plan. */
  readonly reason?: string
  /** With that reason: the members that moved, and why each. */
  readonly moved?: ReadonlyArray<{ readonly actionId: string; readonly why: string }>
}

const movedOf = (members: unknown): ReadonlyArray<{ readonly actionId: string; readonly why: string }> | undefined =>
  Array.isArray(members)
    ? members.filter(isRecord).map((m) => ({ actionId: String(m["actionId"] ?? ""), why: String(m["why"] ?? "") }))
    : undefined

/** The refusal's extras: the grant it needs, a conflict's reason and the members that moved. */
const extrasOf = (body: Record<string, unknown>): Pick<ApiFailure, "requiredGrant" | "reason" | "moved"> => {
  const moved = movedOf(body["members"])
  return {
    ...(typeof body["required_grant"] === "string" ? { requiredGrant: body["required_grant"] } : {}),
    ...(typeof body["reason"] === "string" ? { reason: body["reason"] } : {}),
    ...(moved === undefined ? {} : { moved })
  }
}

/**
 * The typed client checks a payload against the declaration before sending it, so input the server would refuse
 * with 400 is refused here: said as the server says it, `field: problem` for each field at fault.
 */
const unsent = (error: ParseResult.ParseError): ApiFailure => {
  const byField = new Map<string, Array<string>>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const field = issue.path.length === 0 ? "body" : issue.path.map(String).join(".")
    byField.set(field, [...byField.get(field) ?? [], issue.message])
  }
  const fields = [...byField].map(([field, messages]) => `${field}: ${messages.join(" or ")}`)
  return { code: "invalid_request", message: `invalid request: ${fields.join("; ")}` }
}

export const toFailure = (error: unknown): ApiFailure => {
  if (ParseResult.isParseError(error)) return unsent(error)
  if (isRecord(error) && isRecord(error["error"])) {
    const body = error["error"]
    const details = Array.isArray(body["validation_errors"]) ? `: ${body["validation_errors"].join("; ")}` : ""
    return {
      code: String(body["code"] ?? "error"),
      message: `${String(body["message"] ?? "the request failed")}${details}`,
      ...extrasOf(body)
    }
  }
  // A refusal the declaration names arrives decoded: the error class, its fields as the envelope carried them.
  if (isRecord(error) && typeof error["message"] === "string") {
    return { code: String(error["_tag"] ?? "error"), message: error["message"], ...extrasOf(error) }
  }
  return { code: "error", message: String(error) }
}

/** Runs one call of the typed client; a failure is answered, not thrown, for the page to show. */
export const api = async <A, E>(call: (client: Client) => Effect.Effect<A, E>): Promise<Either.Either<A, ApiFailure>> => {
  const resolved = await client
  const exit = await Effect.runPromiseExit(Effect.either(call(resolved)))
  if (exit._tag === "Success") return Either.mapLeft(exit.value, toFailure)
  return Either.left({ code: "error", message: "the console could not reach acs; check the connection and try again" })
}

/** Like `api`, for calls whose failure the page shows as a thrown message. */
export const apiOrThrow = async <A, E>(call: (client: Client) => Effect.Effect<A, E>): Promise<A> => {
  const answer = await api(call)
  if (Either.isLeft(answer)) throw new ApiError(answer.left)
  return answer.right
}

export class ApiError extends Error {
  constructor(readonly failure: ApiFailure) {
    super(failure.message)
  }
}
