/**
 * The console's hash routes (console/src/routes.ts), docs/decisions/console.md: a route is a known page with at most the
 * parameter it takes, and that parameter is an account id of the server's form; whatever else a link holds
 * (`..`, encoded `/`, `?`, `#`, `%`, extra segments) is the not-found page, so no part of it reaches an API path.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { parseRoute } from "../../../console/src/routes.ts"
import { newId } from "../../src/db/Ids.ts"

const ID_FORM = /^prj_[0-9abcdefghjkmnpqrstvwxyz]{16}$/

describe("a console route", () => {
  it("takes the pages and the account ids the server makes", () => {
    const projectId = newId("prj")
    expect(parseRoute("")).toEqual({ page: "approvals", projectId: undefined })
    expect(parseRoute("#/")).toEqual({ page: "approvals", projectId: undefined })
    expect(parseRoute("#/ledger")).toEqual({ page: "ledger", projectId: undefined })
    expect(parseRoute("#/ledger/")).toEqual({ page: "ledger", projectId: undefined })
    for (const page of ["approvals", "ledger", "accounts", "search-terms", "policy"]) {
      expect(parseRoute(`#/${page}/${projectId}`)).toEqual({ page, projectId })
    }
    expect(parseRoute("#/keys")).toEqual({ page: "keys", projectId: undefined })
    expect(parseRoute("#/password")).toEqual({ page: "password", projectId: undefined })
  })

  it("takes one action or changeset of an account, where notifications link", () => {
    const projectId = newId("prj")
    const actionId = newId("act")
    const changesetId = newId("cs")
    expect(parseRoute(`#/change/${projectId}/${actionId}`)).toEqual({ page: "change", projectId, id: actionId })
    expect(parseRoute(`#/change/${projectId}/${changesetId}`)).toEqual({ page: "change", projectId, id: changesetId })
    for (const hash of [
      `#/change/${projectId}`, `#/change/${projectId}/`, `#/change/${projectId}/${actionId}/x`, `#/change/${actionId}/${projectId}`,
      `#/change/${projectId}/key_${actionId.slice(4)}`, `#/change/${projectId}/..%2F${actionId}`, `#/change/${projectId}/${actionId}%3Fx`
    ]) expect(parseRoute(hash), hash).toEqual({ page: "not-found" })
  })

  it("is not found for a crafted link", () => {
    const projectId = newId("prj")
    for (const hash of [
      "#/ledger/..%2F..%2Fkeys", "#/ledger/../../keys", "#/ledger/x%2F..%2F..%2Fkeys%3F", "#/accounts/..", "#/policy/.",
      `#/ledger/${projectId}%3Flimit%3D1`, `#/ledger/${projectId}?x`, `#/ledger/${projectId}#x`, `#/ledger/${projectId}/..`,
      `#/ledger/${projectId.toUpperCase()}`, "#/ledger/%zz", "#/ledger/prj_1", `#/keys/${projectId}`, "#/password/x", "#/nonsense",
      "#/constructor", "#/__proto__", `#/ledger/key_${projectId.slice(4)}`, `#/ledger/ ${projectId}`
    ]) expect(parseRoute(hash), hash).toEqual({ page: "not-found" })
  })

  it("never hands on a parameter that is not an id of the server's form", () => {
    const segment = fc.oneof(fc.string(), fc.constantFrom("..", ".", "%2F", "%2e%2e", "?", "#", "prj_", newId("prj")))
    fc.assert(fc.property(fc.constantFrom("approvals", "ledger", "accounts", "search-terms", "policy", "keys", "password", "change", "x"), fc.array(segment, { maxLength: 3 }),
      (page, rest) => {
        const route = parseRoute(`#/${[page, ...rest].join("/")}`)
        return route.page === "not-found" || route.projectId === undefined ||
          (ID_FORM.test(route.projectId) && (route.page !== "change" || /^(act|cs)_[0-9abcdefghjkmnpqrstvwxyz]{16}$/.test(route.id)))
      }), { numRuns: 2_000 })
  })
})
