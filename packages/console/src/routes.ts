/**
 * The console's hash routes: `#/ledger/prj_…` → the ledger of that account; `#/change/prj_…/act_…` (or `cs_…`) → one
 * action or changeset, where notifications link. Only a well-formed route is one: a
 * known page, at most the parameters it takes, and an account id of the form the server makes (domain/IdFormat.ts),
 * taken as written (never decoded: an id has nothing to decode). Anything else — `..`, an encoded `/`, `?` or `#`,
 * a stray segment — is the not-found page, so no part of a crafted link reaches an API path.
 */
import { isId } from "@acs/domain/IdFormat"

export type Page = "approvals" | "ledger" | "accounts" | "search-terms" | "policy" | "keys" | "password"

export type Route =
  | { readonly page: Page; readonly projectId: string | undefined }
  | { readonly page: "change"; readonly projectId: string; readonly id: string }
  | { readonly page: "not-found" }

/** What each page takes after its name: an optional account, or nothing. */
const TAKES: Readonly<Record<Page, "account" | "nothing">> = {
  approvals: "account",
  ledger: "account",
  accounts: "account",
  "search-terms": "account",
  policy: "account",
  keys: "nothing",
  password: "nothing"
}

const isPage = (name: string): name is Page => Object.hasOwn(TAKES, name)

export const NOT_FOUND: Route = { page: "not-found" }

/** The route of a location hash (`#/ledger/prj_…`; empty is the approvals page). */
export const parseRoute = (hash: string): Route => {
  const path = hash.replace(/^#\/?/, "")
  if (path === "") return { page: "approvals", projectId: undefined }
  const [name, ...rest] = path.split("/")
  if (name === "change") {
    const [projectId, id, ...more] = rest
    return projectId !== undefined && id !== undefined && more.length === 0 && isId("prj", projectId) && (isId("act", id) || isId("cs", id))
      ? { page: "change", projectId, id }
      : NOT_FOUND
  }
  if (name === undefined || !isPage(name)) return NOT_FOUND
  // A trailing slash (`#/ledger/`) is the page itself.
  const params = rest.at(-1) === "" ? rest.slice(0, -1) : rest
  if (params.length === 0) return { page: name, projectId: undefined }
  if (params.length > 1 || TAKES[name] === "nothing" || !isId("prj", params[0]!)) return NOT_FOUND
  return { page: name, projectId: params[0] }
}
