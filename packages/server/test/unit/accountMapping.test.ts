/**
 * Moving a connection to a listing that names accounts differently (v5 org ids → v1 ad account ids): each
 * imported account keeps its project and takes its new id, never a guessed one.
 */
import { describe, expect, it } from "vitest"
import { mapImportedAccounts } from "../../src/accounts/AccountMapping.ts"

const imported = (projectId: string, upstreamAccountId: string, name: string, currency = "USD") => ({ projectId, upstreamAccountId, name, currency })
const reachable = (upstreamAccountId: string, name: string, currency = "USD") => ({ upstreamAccountId, name, currency })

describe("mapImportedAccounts", () => {
  it("keeps accounts whose id the new listing still has, and moves the others by name and currency", () => {
    expect(mapImportedAccounts(
      [imported("prj_a", "100", "Acme US"), imported("prj_b", "200", "Acme JP", "JPY")],
      [reachable("100", "Acme US"), reachable("9200", "Acme JP", "JPY")]
    )).toEqual([{ projectId: "prj_b", from: "200", to: "9200" }])
  })

  it("never guesses: two candidates, two claimants, another currency or an id already imported leave the account as it is", () => {
    expect(mapImportedAccounts([imported("prj_a", "1", "Same")], [reachable("11", "Same"), reachable("12", "Same")])).toEqual([])
    expect(mapImportedAccounts([imported("prj_a", "1", "Same"), imported("prj_b", "2", "Same")], [reachable("11", "Same")])).toEqual([])
    expect(mapImportedAccounts([imported("prj_a", "1", "Acme", "USD")], [reachable("11", "Acme", "EUR")])).toEqual([])
    expect(mapImportedAccounts(
      [imported("prj_a", "1", "Acme"), imported("prj_b", "11", "Other")],
      [reachable("11", "Acme")]
    )).toEqual([])
  })

  it("is the identity when nothing changed", () => {
    const accounts = [imported("prj_a", "1", "A"), imported("prj_b", "2", "B")]
    expect(mapImportedAccounts(accounts, accounts.map((a) => reachable(a.upstreamAccountId, a.name)))).toEqual([])
  })
})
