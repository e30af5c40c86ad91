/** The console's shell: sign-in, the navigation, the live indicator, and the page of the route. */
import type { Principal } from "@acs/domain/Principal"
import { Either } from "effect"
import { useEffect, useState } from "preact/hooks"
import { api } from "./api.ts"
import { Notice } from "./components.tsx"
import { useRoute } from "./hooks.ts"
import { liveMode, onModeChange, startLive, stopLive } from "./live.ts"
import { AccountsPage } from "./pages/Accounts.tsx"
import { ConsentPage } from "./pages/Consent.tsx"
import { ApprovalsPage } from "./pages/Approvals.tsx"
import { ChangePage } from "./pages/Change.tsx"
import { KeysPage } from "./pages/Keys.tsx"
import { LedgerPage } from "./pages/Ledger.tsx"
import { PasswordPage } from "./pages/Password.tsx"
import { PolicyPage } from "./pages/Policy.tsx"
import { SearchTermsPage } from "./pages/SearchTerms.tsx"
import { NOT_FOUND } from "./routes.ts"
import { accountOf, type Session } from "./session.ts"

const PAGES = [
  { route: "approvals", label: "Approvals" },
  { route: "ledger", label: "Ledger" },
  { route: "accounts", label: "Accounts" },
  { route: "search-terms", label: "Search terms" },
  { route: "policy", label: "Policy and settings" },
  { route: "keys", label: "Keys and people" },
  { route: "password", label: "Password" }
] as const

const SignIn = (props: { readonly onSignedIn: (principal: Principal) => void }) => {
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    setBusy(true)
    const answer = await api((c) => c.publicAuth.login({ payload: { email: String(form.get("email")), password: String(form.get("password")) } }))
    setBusy(false)
    if (Either.isLeft(answer)) return setError(answer.left.message)
    props.onSignedIn(answer.right.principal)
  }
  return (
    <main id="main" class="sign-in">
      <h1>Sign in to acs</h1>
      <p class="muted">Approve, review and undo changes to your Apple Ads accounts.</p>
      <form onSubmit={submit}>
        <label class="field"><span>Email</span><input name="email" type="email" autocomplete="username" required /></label>
        <label class="field"><span>Password</span><input name="password" type="password" autocomplete="current-password" required /></label>
        <button type="submit" class="primary" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
        <Notice error={error} />
      </form>
    </main>
  )
}

/** A link that names no page of the console, or an account the person does not reach. */
const NotFound = () => (
  <section aria-labelledby="not-found-title">
    <h1 id="not-found-title">Page not found</h1>
    <p>Nothing in the console is at this address: the link may be mistyped, or name an account you do not reach.</p>
    <p><a href="#/approvals">Go to the approvals</a></p>
  </section>
)

const LiveIndicator = () => {
  const [mode, setMode] = useState(liveMode)
  useEffect(() => {
    const unsubscribe = onModeChange(() => setMode(liveMode))
    // The stream can open between the first render and this effect (effects run after the next frame, late on
    // a busy machine): without reading the mode again here, that change is missed and "Connecting…" stays.
    setMode(liveMode)
    return unsubscribe
  }, [])
  const label = mode === "stream" ? "Live" : mode === "polling" ? "Updating every 15 seconds" : "Connecting…"
  return <span class={`live live-${mode}`} role="status" aria-live="polite">{label}</span>
}

const Shell = (props: { readonly session: Session; readonly onSignOut: () => void }) => {
  const parsed = useRoute()
  // An account the person does not reach is no page either: its id never reaches an API path.
  const route = parsed.page !== "not-found" && parsed.projectId !== undefined && accountOf(props.session, parsed.projectId) === undefined
    ? NOT_FOUND
    : parsed
  const page = route.page
  const [menuOpen, setMenuOpen] = useState(false)
  const signOut = async () => {
    await api((c) => c.auth.logout())
    props.onSignOut()
  }
  const content = (() => {
    switch (route.page) {
      case "not-found":
        return <NotFound />
      case "ledger":
        return <LedgerPage session={props.session} projectId={route.projectId} />
      case "accounts":
        return <AccountsPage session={props.session} projectId={route.projectId} />
      case "search-terms":
        return <SearchTermsPage session={props.session} projectId={route.projectId} />
      case "policy":
        return <PolicyPage session={props.session} projectId={route.projectId} />
      case "keys":
        return <KeysPage session={props.session} />
      case "password":
        return <PasswordPage session={props.session} />
      case "approvals":
        return <ApprovalsPage session={props.session} />
      case "change":
        // Keyed by the change: another change's page starts afresh (no notice of the last one's decision).
        return <ChangePage key={route.id} session={props.session} projectId={route.projectId} id={route.id} />
    }
  })()
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <div class="brand"><span aria-hidden="true">◆</span> acs console</div>
        <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <nav id="nav" aria-label="Pages" class={menuOpen ? "open" : ""}>
          <ul>
            {PAGES.map((p) => (
              <li key={p.route}>
                <a href={`#/${p.route}`} aria-current={page === p.route ? "page" : undefined}
                  onClick={() => setMenuOpen(false)}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <LiveIndicator />
          <span>{props.session.me.name} · {props.session.me.role ?? props.session.me.scope}</span>
          <button type="button" onClick={signOut}>Sign out</button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>{content}</main>
    </>
  )
}

export const App = () => {
  const [session, setSession] = useState<Session | null | undefined>(undefined)
  const [error, setError] = useState<string>()

  const enter = async (me: Principal) => {
    const accounts = await api((c) => c.accounts.listAccounts())
    if (Either.isLeft(accounts)) return setError(accounts.left.message)
    setSession({ me, accounts: accounts.right.accounts })
    startLive()
  }

  useEffect(() => {
    void api((c) => c.auth.getMe()).then((answer) => (Either.isRight(answer) ? enter(answer.right.principal) : setSession(null)))
  }, [])

  if (error !== undefined) return <main id="main"><Notice error={error} /></main>
  if (session === undefined) return <main id="main"><p>Loading…</p></main>
  if (session === null) return <SignIn onSignedIn={(me) => void enter(me)} />
  if (session.me.kind !== "person") return <main id="main"><Notice error="The console is for people signed in with a password." /></main>
  // A remote MCP client's sign-in (http/OAuthRoute.ts sends the browser here): the consent page, alone.
  if (window.location.pathname === "/oauth/consent") return <ConsentPage session={session} />
  return (
    <Shell
      session={session}
      onSignOut={() => {
        stopLive()
        setSession(null)
      }}
    />
  )
}
