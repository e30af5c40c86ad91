/**
 * Runs a write handler and appends what it changed to the change history: every entity the call names
 * (path id, bulk row ids) or creates is encoded in v1 before and after, and the differing fields become
 * one record each, attributed to the request's actor. Used for v5 calls and for the v5 handlers the v1
 * routes delegate to, so a write is recorded once whichever version made it.
 */
import type { AuditEntityType, ChangeRecord } from "./SimulatorChangeHistory.ts"
import { changedFields } from "./SimulatorChangeHistory.ts"
import type { SimEntity } from "./SimulatorState.ts"
import type { Answer } from "./SimulatorHttp.ts"
import type { OrgRequest } from "./SimulatorRouter.ts"
import type { WireObject } from "./SimulatorWire.ts"
import { entityToV1 } from "./v1/SimulatorV1Wire.ts"

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Ids a write names before it runs: the last path id, bulk rows' `id`, bulk delete's plain ids. */
const namedIds = (request: OrgRequest): Array<number> => {
  const ids: Array<number> = []
  if ((request.method === "PUT" || request.method === "DELETE") && !request.path.endsWith("/bulk")) {
    const last = request.ids[request.ids.length - 1]
    if (last !== undefined) ids.push(last)
  }
  if (Array.isArray(request.body)) {
    for (const row of request.body) {
      if (typeof row === "number") ids.push(row)
      else if (isObject(row) && typeof row["id"] === "number") ids.push(row["id"])
    }
  }
  return ids
}

/** Ids of entities an answer carries (creates answer the new entity or rows). */
const answeredIds = (answer: Answer): Array<number> => {
  const data = isObject(answer.body) ? answer.body["data"] : undefined
  const rows = Array.isArray(data) ? data : [data]
  return rows.flatMap((row) => isObject(row) && typeof row["id"] === "number" ? [row["id"]] : [])
}

const AUDIT_TYPES: Record<SimEntity["kind"], AuditEntityType> = {
  CAMPAIGN: "Campaign",
  ADGROUP: "AdGroup",
  KEYWORD: "Keyword",
  NEGATIVE_KEYWORD: "NegativeKeyword",
  AD: "Ad"
}

/** The entity `id` and its v1 encoding, or null when there is none. */
const snapshot = (request: OrgRequest, id: number): { readonly found: SimEntity; readonly wire: WireObject } | null => {
  const found = request.state.entity(id)
  return found === undefined ? null : { found, wire: entityToV1(request.account, found) }
}

export const recordingWrite = (request: OrgRequest, handle: (request: OrgRequest) => Answer): Answer => {
  const { state, account } = request
  const before = new Map<number, ReturnType<typeof snapshot>>()
  for (const id of namedIds(request)) before.set(id, snapshot(request, id))
  const answer = handle(request)
  if (answer.status >= 300) return answer
  const ids = new Set([...before.keys(), ...answeredIds(answer)])
  const { eventTime, transactionId } = state.history.nextTransaction(state.nowMs())
  for (const id of ids) {
    const was = before.get(id) ?? null
    const is = snapshot(request, id)
    if (is === null) continue
    const wasLive = was !== null && was.wire["deleted"] !== true
    const eventType: ChangeRecord["eventType"] = was === null ? "CREATE" : wasLive && is.wire["deleted"] === true ? "DELETE" : "UPDATE"
    const { newValues, oldValues } = changedFields(was?.wire ?? null, is.wire)
    if (Object.keys(newValues).length === 0) continue
    const entity = is.found.entity
    state.history.add({
      adAccountId: account.orgId,
      eventTime,
      actor: request.actor,
      transactionId,
      eventType,
      entityType: AUDIT_TYPES[is.found.kind],
      entityId: id,
      campaignId: is.found.kind === "CAMPAIGN" ? entity.id : "campaignId" in entity ? entity.campaignId : null,
      adGroupId: is.found.kind === "ADGROUP" ? entity.id : "adGroupId" in entity ? entity.adGroupId : null,
      snapshot: is.wire,
      oldValues,
      newValues
    })
  }
  return answer
}
