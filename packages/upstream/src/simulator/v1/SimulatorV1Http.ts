/**
 * v1 answers and refusals: `{result, pagination}` and `{error:{code, message, details[]}}`. Handlers
 * throw the same `WireFailure` as v5 ones (so the shared v5 handlers can be delegated to); it is
 * rendered here in the v1 shape, each v5 error item becoming a detail.
 */
import type { WireErrorItem } from "../../Wire.ts"
import type { Answer } from "../SimulatorHttp.ts"

export const V1_PREFIX = "/v1"

export interface V1Pagination {
  readonly offset: number
  readonly pageSize: number
  readonly totalCount?: number
}

export const v1Ok = (result: unknown, pagination: V1Pagination | null = null): Answer => ({
  status: 200,
  body: pagination === null ? { result } : { result, pagination }
})

/** v5 codes renamed to the v1 ones Apple's reference uses where one exists. */
const V1_CODES: Readonly<Record<string, string>> = {
  INVALID_INPUT: "INVALID_ARGUMENT",
  NOT_FOUND: "ENTITY_NOT_FOUND",
  FORBIDDEN: "FORBIDDEN",
  UNAUTHORIZED: "UNAUTHENTICATED"
}

export const v1Code = (code: string): string => V1_CODES[code] ?? code

export const v1ErrorBody = (errors: ReadonlyArray<WireErrorItem>) => {
  const first = errors[0]
  return {
    error: {
      code: v1Code(first?.messageCode ?? "INTERNAL_ERROR"),
      message: first?.message ?? "request failed",
      details: errors.map((e) => ({ code: v1Code(e.messageCode), message: e.message, ...(e.field ? { field: e.field } : {}) }))
    }
  }
}

/** Change-history endpoints answer Apple's `ErrorMessage`, whose `code` is a closed set. */
const changeHistoryCode = (status: number): string =>
  status === 404 ? "NOT_FOUND" : status === 401 || status === 403 ? "NOT_AUTHED" : "BAD_REQUEST"

/** A v5-shaped error answer re-rendered in the v1 shape (status and headers kept). */
export const toV1Error = (answer: Answer, path: string): Answer => {
  const body = answer.body
  const errors = typeof body === "object" && body !== null && "error" in body
    ? (body as { readonly error: { readonly errors?: ReadonlyArray<WireErrorItem> } | null }).error?.errors ?? []
    : []
  if (path.startsWith(`${V1_PREFIX}/change-history`) && answer.status < 500 && answer.status !== 429) {
    return { ...answer, body: { error: { code: changeHistoryCode(answer.status), message: errors[0]?.message ?? `HTTP ${answer.status}` } } }
  }
  return { ...answer, body: v1ErrorBody(errors) }
}

/** "/campaigns/:id" → a regex over the full v1 path with one numeric group per :id. */
export const v1Path = (template: string): RegExp => new RegExp(`^${V1_PREFIX}${template.replace(/:id/g, "(\\d{1,15})")}$`)
