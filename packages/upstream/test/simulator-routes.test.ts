/**
 * The simulator's route table answers what a scan of every route's pattern answers: the same routes, in
 * the same order, for the paths the simulator serves and for near misses (ids too long, ids that are not
 * digits, trailing slashes, unknown and overlapping paths).
 */
import { describe, expect, it } from "vitest"
import { accountRoutes } from "../src/simulator/SimulatorAccountRoutes.ts"
import { campaignRoutes } from "../src/simulator/SimulatorCampaignRoutes.ts"
import { keywordRoutes } from "../src/simulator/SimulatorKeywordRoutes.ts"
import { reportRoutes } from "../src/simulator/SimulatorReportRoutes.ts"
import type { HttpMethod, Route } from "../src/simulator/SimulatorRouter.ts"
import { RouteTable } from "../src/simulator/SimulatorRouteTable.ts"
import { v1Routes } from "../src/simulator/v1/SimulatorV1Routes.ts"

const ROUTES: ReadonlyArray<Route> = [...accountRoutes, ...campaignRoutes, ...keywordRoutes, ...reportRoutes, ...v1Routes]
const METHODS: ReadonlyArray<HttpMethod> = ["GET", "POST", "PUT", "DELETE"]

const ID_STANDINS = ["7", "123456789012345", "1234567890123456", "0012", "abc", "12a", "", "-1"]

/** Every template with its ids replaced by each stand-in, plus variations around it. */
const paths = (): ReadonlyArray<string> => {
  const out = new Set<string>()
  for (const route of ROUTES) {
    if (route.template === null) continue
    for (const id of ID_STANDINS) {
      const path = route.template.replace(/:id/g, id)
      out.add(path)
      out.add(`${path}/`)
      out.add(`${path}/find`)
      out.add(`${path}/1`)
      out.add(path.replace(/\/[^/]+$/, ""))
    }
    out.add(route.template)
  }
  for (const path of [
    "/v1/change-history/query",
    "/v1/change-history/123",
    "/v1/change-history/Campaign.123.900000001",
    "/v1/change-history/Campaign%2E123",
    "/v1/change-history/",
    "/v1/change-history/a/b",
    "/v1",
    "/v1/",
    "/api/v5",
    "/api/v5/",
    "/api/v5/campaigns//adgroups",
    "/api/v5/nothing/12",
    "/",
    "/x"
  ]) out.add(path)
  return [...out]
}

describe("simulator route table", () => {
  const table = new RouteTable(ROUTES)

  it("matches every path as a scan of all patterns does, in table order", () => {
    const all = paths()
    expect(all.length).toBeGreaterThan(1000)
    for (const path of all) {
      const indexes = (routes: ReadonlyArray<Route>) => routes.map((route) => ROUTES.indexOf(route))
      expect(indexes(table.matching(path)), path).toEqual(indexes(ROUTES.filter((route) => route.pattern.test(path))))
      for (const method of METHODS) {
        expect(table.find(method, path), `${method} ${path}`)
          .toBe(ROUTES.find((route) => route.method === method && route.pattern.test(path)))
      }
    }
  })

  it("files every template route (only the change-history detail is tested on every path)", () => {
    expect(ROUTES.filter((route) => route.template === null)).toHaveLength(1)
  })
})
