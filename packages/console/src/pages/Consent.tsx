/**
 * The OAuth consent page (`/oauth/consent`, docs/contract.md 5.5): a remote MCP client asks to act for the signed-in
 * person. They see the client's registered name and where it sends them back, choose the accounts (those they
 * reach) and `read` or `write`, and approve or deny; the browser then goes to the client's exact redirect URI. The
 * approval grant is never on offer: an agent connected this way can propose, never approve.
 */
import { Either } from "effect"
import { useEffect, useState } from "preact/hooks"
import { api } from "../api.ts"
import { Notice } from "../components.tsx"
import type { Session } from "../session.ts"

/** What `GET /oauth/clients/{clientId}` answers: the client as it registered. */
interface ClientDescription {
  readonly client_name: string
  readonly redirect_uris: ReadonlyArray<string>
}

const isDescription = (u: unknown): u is ClientDescription =>
  typeof u === "object" && u !== null && "client_name" in u && typeof u.client_name === "string" &&
  "redirect_uris" in u && Array.isArray(u.redirect_uris)

/** The authorization request as acs's authorization endpoint checked it and passed it on. */
const requestOf = (search: string) => {
  const params = new URLSearchParams(search)
  return {
    clientId: params.get("client_id") ?? "",
    redirectUri: params.get("redirect_uri") ?? "",
    codeChallenge: params.get("code_challenge") ?? "",
    codeChallengeMethod: params.get("code_challenge_method") ?? "",
    resource: params.get("resource") ?? "",
    state: params.get("state") ?? undefined,
    scope: params.get("scope") === "write" ? "write" as const : "read" as const
  }
}

const hostOf = (uri: string): string => URL.canParse(uri) ? new URL(uri).host : uri

export const ConsentPage = (props: { readonly session: Session }) => {
  const [request] = useState(() => requestOf(window.location.search))
  const [client, setClient] = useState<ClientDescription | null>()
  // A person whose role only reads cannot hand out writing.
  const canWrite = props.session.me.scope !== "read"
  const [scope, setScope] = useState<"read" | "write">(canWrite ? request.scope : "read")
  const [everyAccount, setEveryAccount] = useState(true)
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set())
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)

  useEffect(() => {
    void fetch(`/oauth/clients/${encodeURIComponent(request.clientId)}`)
      .then(async (answer) => {
        const body: unknown = answer.ok ? await answer.json() : null
        setClient(isDescription(body) && body.redirect_uris.includes(request.redirectUri) ? body : null)
      })
      .catch(() => setClient(null))
  }, [])

  const decide = async (decision: "approve" | "deny") => {
    if (decision === "approve" && !everyAccount && chosen.size === 0) return setError("Choose at least one account, or every account.")
    setBusy(true)
    const { scope: _asked, codeChallengeMethod, state, ...rest } = request
    if (codeChallengeMethod !== "S256") {
      setBusy(false)
      return setError("This request does not use PKCE S256; go back to the application and connect again.")
    }
    const answer = await api((c) =>
      c.auth.authorizeOAuthClient({
        payload: {
          ...rest,
          codeChallengeMethod,
          ...(state === undefined ? {} : { state }),
          decision,
          scope,
          ...(everyAccount ? {} : { projectIds: [...chosen] })
        }
      })
    )
    if (Either.isLeft(answer)) {
      setBusy(false)
      return setError(answer.left.message)
    }
    window.location.assign(answer.right.redirectTo)
  }

  if (client === undefined) return <main id="main"><p>Loading…</p></main>
  if (client === null) {
    return (
      <main id="main" class="consent">
        <h1>This sign-in request cannot continue</h1>
        <p>The application is not registered here, or its return address is not one it registered. Go back to it and connect again.</p>
      </main>
    )
  }
  const toggle = (projectId: string, on: boolean) => {
    const next = new Set(chosen)
    if (on) next.add(projectId)
    else next.delete(projectId)
    setChosen(next)
  }
  return (
    <main id="main" class="consent">
      <section aria-labelledby="consent-title" class="card narrow">
        <h1 id="consent-title">Connect “{client.client_name}” to acs</h1>
        <p>
          Signed in as <strong>{props.session.me.name}</strong>. After your choice you go back to{" "}
          <strong>{hostOf(request.redirectUri)}</strong>.
        </p>
        <fieldset>
          <legend>What it may do</legend>
          <label><input type="radio" name="scope" checked={scope === "read"} onChange={() => setScope("read")} /> Read: look at accounts, reports and changes</label>
          <label>
            <input type="radio" name="scope" checked={scope === "write"} disabled={!canWrite} onChange={() => setScope("write")} />{" "}
            Write: also propose changes, which people approve
          </label>
          <p class="muted">It can never approve a change: approving stays with people.</p>
        </fieldset>
        <fieldset>
          <legend>Which accounts</legend>
          <label><input type="radio" name="reach" checked={everyAccount} onChange={() => setEveryAccount(true)} /> Every account I reach</label>
          <label><input type="radio" name="reach" checked={!everyAccount} onChange={() => setEveryAccount(false)} /> Only these:</label>
          {!everyAccount && (
            <ul class="plain">
              {props.session.accounts.map((account) => (
                <li key={account.projectId}>
                  <label>
                    <input type="checkbox" checked={chosen.has(account.projectId)} onChange={(e) => toggle(account.projectId, e.currentTarget.checked)} />{" "}
                    {account.name}
                  </label>
                </li>
              ))}
            </ul>
          )}
        </fieldset>
        <p class="muted">It gets a key of yours, listed under Keys, where you can revoke it at any time.</p>
        <div class="actions">
          <button type="button" class="primary" disabled={busy} onClick={() => void decide("approve")}>Allow</button>
          <button type="button" disabled={busy} onClick={() => void decide("deny")}>Deny</button>
        </div>
        <Notice error={error} />
      </section>
    </main>
  )
}
