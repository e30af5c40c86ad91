/**
 * The REST routes of the HttpApi declaration, matched before the API's router runs, so the front door knows
 * which operation a request names (and its path params) before anything decodes it.
 */
import { Api, unauthenticatedGroups } from "@acs/domain/Api"
import { type OperationName, Operations } from "@acs/domain/Operations"
import { HttpApi } from "@effect/platform"

export interface ApiRoute {
  readonly method: string
  /** The operation of an authenticated endpoint; undefined for the public ones (health, sign-in, the document). */
  readonly operation: OperationName | undefined
  readonly pattern: RegExp
  readonly params: ReadonlyArray<string>
}

export interface RouteMatch {
  readonly route: ApiRoute
  readonly params: Readonly<Record<string, string>>
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

const compile = (path: string): { readonly pattern: RegExp; readonly params: ReadonlyArray<string> } => {
  const params: Array<string> = []
  const source = path.split("/").map((segment) => {
    if (!segment.startsWith(":")) return escape(segment)
    params.push(segment.slice(1).replace(/\?$/, ""))
    return "([^/]+)"
  }).join("/")
  return { pattern: new RegExp(`^${source}$`), params }
}

const isOperation = (name: string): name is OperationName => Object.hasOwn(Operations, name)

const routes: ReadonlyArray<ApiRoute> = (() => {
  const all: Array<ApiRoute> = []
  HttpApi.reflect(Api, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint, group }) => {
      const authenticated = !unauthenticatedGroups.includes(group.identifier) && isOperation(endpoint.name)
      all.push({ method: endpoint.method, operation: authenticated ? endpoint.name as OperationName : undefined, ...compile(endpoint.path) })
    }
  })
  // A static segment wins over a param, as in the router: `/accounts/import` before `/accounts/:projectId`.
  return all.sort((a, b) => a.params.length - b.params.length)
})()

const decode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/** The route a request names, with its decoded path params; undefined when none matches. */
export const matchRoute = (method: string, pathname: string): RouteMatch | undefined => {
  for (const route of routes) {
    if (route.method !== method) continue
    const match = route.pattern.exec(pathname)
    if (match === null) continue
    const params: Record<string, string> = {}
    for (let i = 0; i < route.params.length; i++) {
      const value = decode(match[i + 1]!)
      if (value === undefined) return undefined
      params[route.params[i]!] = value
    }
    return { route, params }
  }
  return undefined
}
