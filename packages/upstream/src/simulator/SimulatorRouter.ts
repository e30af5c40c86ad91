/**
 * Route table types: each route is a method, a path template under /api/v5 and a handler. Org routes
 * need `X-AP-Context` and get the resolved account; user routes (acls, me) need only the bearer token.
 */
import type { Actor } from "./SimulatorChangeHistory.ts"
import type { Answer } from "./SimulatorHttp.ts"
import type { SimAccount } from "./SimulatorModel.ts"
import type { SimulatorState } from "./SimulatorState.ts"

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE"

export interface UserRequest {
  readonly method: HttpMethod
  readonly path: string
  readonly query: URLSearchParams
  readonly body: unknown
  readonly requestId: string
  /** Path ids, in the order they appear in the template. */
  readonly ids: ReadonlyArray<number>
  readonly state: SimulatorState
}

export interface OrgRequest extends UserRequest {
  readonly account: SimAccount
  /** Bulk row indices a fault makes fail (see SimulatorFaults). */
  readonly failingRows: ReadonlySet<number>
  readonly failingRowMessage: string
  /** Who makes the call: the API client, or a person in the "web UI" (change history). */
  readonly actor: Actor
}

interface RouteBase {
  readonly method: HttpMethod
  readonly pattern: RegExp
  /** The full path template (`/api/v5/campaigns/:id`) the pattern was made from; null for a bare pattern. */
  readonly template: string | null
}

export type Route =
  | RouteBase & { readonly scope: "user"; readonly handle: (request: UserRequest) => Answer }
  | RouteBase & {
    readonly scope: "org"
    /** Refused on read-only accounts. Finds and reports are POSTs that only read. */
    readonly write: boolean
    readonly handle: (request: OrgRequest) => Answer
  }

/** "/campaigns/:id/adgroups/:id" → a regex over the full path with one numeric group per :id. */
export const apiPath = (template: string): RegExp =>
  new RegExp(`^/api/v5${template.replace(/:id/g, "(\\d{1,15})")}$`)

export const userRoute = (method: HttpMethod, template: string, handle: (request: UserRequest) => Answer): Route => ({
  method,
  pattern: apiPath(template),
  template: `/api/v5${template}`,
  scope: "user",
  handle
})

export const readRoute = (method: HttpMethod, template: string, handle: (request: OrgRequest) => Answer): Route => ({
  method,
  pattern: apiPath(template),
  template: `/api/v5${template}`,
  scope: "org",
  write: false,
  handle
})

export const writeRoute = (method: HttpMethod, template: string, handle: (request: OrgRequest) => Answer): Route => ({
  method,
  pattern: apiPath(template),
  template: `/api/v5${template}`,
  scope: "org",
  write: true,
  handle
})

/** The path id at `index`; the pattern guarantees it is there. */
export const idAt = (request: UserRequest, index: number): number => {
  const id = request.ids[index]
  if (id === undefined) throw new Error(`route has no id #${index}`)
  return id
}
