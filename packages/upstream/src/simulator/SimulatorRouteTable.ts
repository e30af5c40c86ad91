/**
 * Route lookup by path. Testing every route's pattern on every request (some 90 regexes) was a visible
 * part of a request's CPU, so routes made from a template are filed under the template's shape (each
 * all-digit segment read as `:id`): a path matching a template's pattern has that template's shape, so
 * only the routes filed under the path's shape (and those without a template) can match, and their
 * patterns still decide. Answers are the table's, in the table's order, as a scan would give them.
 */
import type { HttpMethod, Route } from "./SimulatorRouter.ts"

/** `/api/v5/campaigns/123/adgroups` → `/api/v5/campaigns/:id/adgroups`; templates keep their `:id`. */
const shapeOf = (path: string): string => path.replace(/\/\d+(?=\/|$)/g, "/:id")

/**
 * A template whose pattern is the template itself with `:id` as digits: no character the pattern would
 * read as regex syntax, so every path it matches has the template's shape.
 */
const PLAIN_TEMPLATE = /^[A-Za-z0-9/_:-]*$/

export class RouteTable {
  private readonly byShape = new Map<string, ReadonlyArray<Route>>()
  /** Routes any path may match (no template, or one with regex syntax): tested on every lookup. */
  private readonly unfiled: ReadonlyArray<Route>

  constructor(readonly routes: ReadonlyArray<Route>) {
    const filed = (route: Route) => route.template !== null && PLAIN_TEMPLATE.test(route.template)
    this.unfiled = routes.filter((route) => !filed(route))
    const shapes = new Set(routes.flatMap((route) => route.template !== null && filed(route) ? [shapeOf(route.template)] : []))
    for (const shape of shapes) {
      // The shape's routes and the unfiled ones, in table order.
      this.byShape.set(shape, routes.filter((route) => !filed(route) || (route.template !== null && shapeOf(route.template) === shape)))
    }
  }

  /** Every route whose pattern matches `path`, in table order. */
  matching(path: string): Array<Route> {
    const candidates = this.byShape.get(shapeOf(path)) ?? this.unfiled
    const matched: Array<Route> = []
    for (const route of candidates) if (route.pattern.test(path)) matched.push(route)
    return matched
  }

  /** The first route for `method` whose pattern matches `path`. */
  find(method: HttpMethod, path: string): Route | undefined {
    const candidates = this.byShape.get(shapeOf(path)) ?? this.unfiled
    return candidates.find((route) => route.method === method && route.pattern.test(path))
  }
}
