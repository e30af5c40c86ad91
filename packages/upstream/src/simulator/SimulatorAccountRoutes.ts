/** `/acls`, `/me`, `/search/apps` and `/search/geo`. */
import { Schema } from "effect"
import { WireMe } from "../Wire.ts"
import { GEO } from "./SimulatorCatalog.ts"
import { ok, pageFromQuery, pageOf } from "./SimulatorHttp.ts"
import { readRoute, type Route, userRoute } from "./SimulatorRouter.ts"
import { aclToWire, appToWire, geoToWire } from "./SimulatorWire.ts"

const encodeMe = Schema.encodeSync(WireMe)

const contains = (text: string, query: string | null) => query === null || text.toLowerCase().includes(query.toLowerCase())

export const accountRoutes: ReadonlyArray<Route> = [
  userRoute("GET", "/acls", ({ state }) => ok(state.accounts.map((account) => aclToWire(state.world, account)))),

  userRoute("GET", "/me", ({ state }) => ok(encodeMe({ userId: state.world.userId, parentOrgId: state.world.parentOrgId }))),

  readRoute("GET", "/search/apps", ({ account, query, state }) => {
    const ownedOnly = query.get("returnOwnedApps") === "true"
    const text = query.get("query")
    const apps = state.world.apps.filter((app) =>
      (!ownedOnly || app.ownerOrgId === account.orgId) && contains(app.appName, text)
    )
    const { items, pagination } = pageOf(apps, pageFromQuery(query))
    return ok(items.map(appToWire), pagination)
  }),

  readRoute("GET", "/search/geo", ({ query }) => {
    const text = query.get("query")
    const country = query.get("countrycode")
    const entity = query.get("entity")
    const found = GEO.filter((geo) =>
      contains(geo.displayName, text) &&
      (country === null || geo.countryCode === country.toUpperCase()) &&
      (entity === null || geo.entity.toLowerCase() === entity.toLowerCase())
    )
    const { items, pagination } = pageOf(found, pageFromQuery(query))
    return ok(items.map(geoToWire), pagination)
  })
]
