/**
 * Keys and people. Admins create API keys (scope, the approve grant, the accounts it reaches, an expiry),
 * see the secret once with a copy button, and revoke keys; they add people (a generated password shown
 * once), set their roles and Slack users, disable or enable them, and revoke all of a person's keys. A key acts
 * with at most its person's current role, and not at all while they are disabled: the table says what each key
 * may do now. Every person changes their own password on the Password page.
 */
import type { ApiKey, CreatedKey as CreatedKeySchema } from "@acs/domain/ApiKeys"
import type { Person } from "@acs/domain/People"
import type { Binding, Role } from "@acs/domain/Principal"
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api, apiOrThrow } from "../api.ts"
import { Dialog, Notice, TableWrap } from "../components.tsx"
import { dateTime } from "../format.ts"
import { useLoad } from "../hooks.ts"
import { accountOf, type Session } from "../session.ts"

type CreatedKey = typeof CreatedKeySchema.Type
type Scope = ApiKey["scope"]
type Reach = "org" | "subset" | "account"

const bindingLabel = (session: Session, binding: Binding): string => {
  const name = (projectId: string) => accountOf(session, projectId)?.name ?? projectId
  switch (binding.kind) {
    case "org":
      return "every account"
    case "subset":
      return binding.projectIds.map(name).join(", ")
    case "account":
      return `${name(binding.projectId)} only`
  }
}

/** A key's own value, and what its person's current role lets it use when that is less. */
const capped = (own: string, now: string): string => own === now ? own : `${now} (its own: ${own}; capped by its person's role)`

/**
 * Revoking a key after a confirmation, the same for an admin's keys and a person's own: `ask` opens the dialog,
 * `revokeCell` is the table's last cell, `notice` says how it went.
 */
const useKeyRevocation = (revokeCall: (keyId: string) => Promise<Either.Either<unknown, { readonly message: string }>>, reload: () => void) => {
  const [revoking, setRevoking] = useState<ApiKey | null>(null)
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const revoke = async (key: ApiKey) => {
    setRevoking(null)
    const answer = await revokeCall(key.keyId)
    setNotice(Either.isLeft(answer) ? { error: answer.left.message } : { message: `Key “${key.name}” revoked: it is refused from its next request.` })
    reload()
  }
  const revokeCell = (k: ApiKey) =>
    k.revokedAt === null
      ? <button type="button" class="danger" aria-label={`Revoke ${k.name}`} onClick={() => setRevoking(k)}>Revoke…</button>
      : `revoked ${dateTime(k.revokedAt)}`
  const dialog = revoking !== null && (
    <Dialog title={`Revoke “${revoking.name}”?`} onClose={() => setRevoking(null)}>
      <p>Every script, agent or app using this key is refused from its next request, on every instance. This cannot be undone.</p>
      <div class="actions">
        <button type="button" class="danger" onClick={() => revoke(revoking)}>Revoke</button>
        <button type="button" onClick={() => setRevoking(null)}>Cancel</button>
      </div>
    </Dialog>
  )
  return { notice, revokeCell, dialog } as const
}

export const KeysPage = (props: { readonly session: Session }) => {
  const { session } = props
  if (session.me.scope !== "admin") return <OwnKeys />
  return <AdminKeys session={session} />
}

/** A person who is not an admin sees and revokes what acts for them: the apps they connected with OAuth, mostly. */
const OwnKeys = () => {
  const keys = useLoad(() => apiOrThrow((c) => c.auth.listMyKeys()), [])
  const { dialog, notice, revokeCell } = useKeyRevocation((keyId) => api((c) => c.auth.revokeMyKey({ path: { keyId } })), keys.reload)

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">Your keys and connected apps</h1>
      <p>API keys and people are managed by admins. You can change your own password on the <a href="#/password">Password</a> page.</p>
      <Notice error={keys.error ?? notice.error} message={notice.message} />
      <TableWrap label="Your keys">
        <table>
          <caption>Keys that act for you</caption>
          <thead>
            <tr><th scope="col">Name</th><th scope="col">Scope</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Revoke</span></th></tr>
          </thead>
          <tbody>
            {(keys.data?.keys ?? []).map((k) => (
              <tr key={k.keyId} class={k.revokedAt === null ? "" : "revoked"}>
                <th scope="row">{k.name}{k.kind === "oauth" && <span class="muted"> (connected app, OAuth)</span>}</th>
                <td>{k.effective === null ? k.scope : capped(k.scope, k.effective.scope)}</td>
                <td>{k.expiresAt === null ? "never" : dateTime(k.expiresAt)}</td>
                <td>{k.lastUsedAt === null ? "never" : dateTime(k.lastUsedAt)}</td>
                <td>{revokeCell(k)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      {dialog}
    </section>
  )
}

const AdminKeys = (props: { readonly session: Session }) => {
  const { session } = props
  const [created, setCreated] = useState<CreatedKey | null>(null)
  const keys = useLoad(() => apiOrThrow((c) => c.keys.listKeys()), [])
  const { dialog, notice, revokeCell } = useKeyRevocation((keyId) => api((c) => c.keys.revokeKey({ path: { keyId } })), keys.reload)

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">Keys and people</h1>
      <CreateKeyForm session={session} onCreated={(k) => {
        setCreated(k)
        keys.reload()
      }} />
      <Notice error={keys.error ?? notice.error} message={notice.message} />
      <TableWrap label="API keys">
        <table>
          <caption>API keys</caption>
          <thead>
            <tr><th scope="col">Name</th><th scope="col">Answers to</th><th scope="col">Scope</th><th scope="col">Approves</th><th scope="col">Reaches</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Revoke</span></th></tr>
          </thead>
          <tbody>
            {(keys.data?.keys ?? []).map((k) => (
              <tr key={k.keyId} class={k.revokedAt === null ? "" : "revoked"}>
                <th scope="row">{k.name}{k.kind === "oauth" && <span class="muted"> (connected app, OAuth)</span>}</th>
                <td>{k.root.kind === "person" ? k.root.name : k.root.id === k.keyId ? "the workspace (org key)" : `org key “${k.root.name}”`}</td>
                <td>{k.effective === null ? `${k.scope}; suspended while ${k.root.name} is disabled` : capped(k.scope, k.effective.scope)}</td>
                <td>{k.effective === null ? "no" : capped(k.canApprove ? "yes" : "no", k.effective.canApprove ? "yes" : "no")}</td>
                <td>{bindingLabel(session, k.binding)}</td>
                <td>{k.expiresAt === null ? "never" : k.kind === "oauth" ? `${dateTime(k.expiresAt)}, renewed while the app refreshes` : dateTime(k.expiresAt)}</td>
                <td>{k.lastUsedAt === null ? "never" : dateTime(k.lastUsedAt)}</td>
                <td>{revokeCell(k)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      <PeopleSection session={session} onKeysChanged={keys.reload} />
      {created !== null && (
        <Dialog title="Copy the key's secret now" onClose={() => setCreated(null)}>
          <p>This is the only time acs shows the secret of “{created.key.name}”. Store it where the script or agent reads it.</p>
          <SecretField secret={created.secret} />
          <div class="actions"><button type="button" class="primary" onClick={() => setCreated(null)}>I have stored it</button></div>
        </Dialog>
      )}
      {dialog}
    </section>
  )
}

const SecretField = (props: { readonly secret: string }) => {
  const [copied, setCopied] = useState<string>()
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.secret)
      setCopied("Copied to the clipboard.")
    } catch {
      setCopied("The browser refused the clipboard: select the secret and copy it.")
    }
  }
  return (
    <div class="secret">
      <label class="field"><span>Secret</span>
        <input type="text" readOnly value={props.secret} onFocus={(e) => e.currentTarget.select()} data-secret="true" />
      </label>
      <button type="button" onClick={copy}>Copy</button>
      {copied !== undefined && <p role="status">{copied}</p>}
    </div>
  )
}

const CreateKeyForm = (props: { readonly session: Session; readonly onCreated: (key: CreatedKey) => void }) => {
  const { session } = props
  const [name, setName] = useState("")
  const [scope, setScope] = useState<Scope>("read")
  const [canApprove, setCanApprove] = useState(false)
  const [reach, setReach] = useState<Reach>("org")
  const [projects, setProjects] = useState<ReadonlySet<string>>(new Set())
  const [account, setAccount] = useState(session.accounts[0]?.projectId ?? "")
  const [expires, setExpires] = useState("")
  const [error, setError] = useState<string>()

  const submit = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    const expiresAt = expires === "" ? {} : { expiresAt: new Date(`${expires}T23:59:59Z`).toISOString() }
    const answer = reach === "account"
      ? await api((c) => c.keys.createAccountKey({ path: { projectId: account }, payload: { name, scope, canApprove, ...expiresAt } }))
      : await api((c) =>
        c.keys.createKey({
          payload: { name, scope, canApprove, ...(reach === "subset" ? { projectIds: [...projects] } : {}), ...expiresAt }
        })
      )
    if (Either.isLeft(answer)) return setError(answer.left.message)
    setName("")
    props.onCreated(answer.right)
  }

  return (
    <form onSubmit={submit} class="card" aria-labelledby="create-key-title">
      <h2 id="create-key-title">Create an API key</h2>
      <div class="inline-form">
        <label class="field"><span>Name</span><input required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="bidding script" /></label>
        <label class="field"><span>Scope</span>
          <select value={scope} onChange={(e) => setScope(e.currentTarget.value as Scope)}>
            <option value="read">read</option><option value="write">write (proposes)</option><option value="admin">admin</option>
          </select>
        </label>
        <label class="check"><input type="checkbox" checked={canApprove} onChange={(e) => setCanApprove(e.currentTarget.checked)} /> May approve, reject and revert</label>
        <label class="field"><span>Expires (end of day, UTC; empty: never)</span><input type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} /></label>
      </div>
      <fieldset>
        <legend>Accounts it reaches</legend>
        <label class="check"><input type="radio" name="reach" checked={reach === "org"} onChange={() => setReach("org")} /> Every account</label>
        <label class="check"><input type="radio" name="reach" checked={reach === "subset"} onChange={() => setReach("subset")} /> Some accounts</label>
        <label class="check"><input type="radio" name="reach" checked={reach === "account"} onChange={() => setReach("account")} /> One account (usable as <code>current</code>)</label>
        {reach === "subset" && session.accounts.map((a) => (
          <label key={a.projectId} class="check indent">
            <input type="checkbox" checked={projects.has(a.projectId)} onChange={(e) => {
              const checked = e.currentTarget.checked
              setProjects((p) => {
                const next = new Set(p)
                if (checked) next.add(a.projectId)
                else next.delete(a.projectId)
                return next
              })
            }} /> {a.name}
          </label>
        ))}
        {reach === "account" && (
          <label class="field indent"><span>Account</span>
            <select value={account} onChange={(e) => setAccount(e.currentTarget.value)}>
              {session.accounts.map((a) => <option key={a.projectId} value={a.projectId}>{a.name}</option>)}
            </select>
          </label>
        )}
      </fieldset>
      <button type="submit" class="primary">Create key</button>
      <Notice error={error} />
    </form>
  )
}

const ROLES: ReadonlyArray<{ readonly role: Role; readonly label: string }> = [
  { role: "viewer", label: "viewer (reads)" },
  { role: "editor", label: "editor (proposes)" },
  { role: "approver", label: "approver (proposes, decides)" },
  { role: "admin", label: "admin (everything)" }
]

const PeopleSection = (props: { readonly session: Session; readonly onKeysChanged: () => void }) => {
  const people = useLoad(() => apiOrThrow((c) => c.people.listPeople()), [])
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const [email, setEmail] = useState("")
  const [name, setName] = useState("")
  const [role, setRole] = useState<Role>("viewer")
  const [added, setAdded] = useState<{ readonly email: string; readonly password: string } | null>(null)
  const [disabling, setDisabling] = useState<Person | null>(null)
  const [revokingKeysOf, setRevokingKeysOf] = useState<Person | null>(null)

  const add = async (event: Event) => {
    event.preventDefault()
    const answer = await api((c) => c.people.createPerson({ payload: { email, name, role } }))
    if (Either.isLeft(answer)) return setNotice({ error: answer.left.message })
    setNotice({ message: `${answer.right.person.name} added as ${answer.right.person.role}.` })
    if (answer.right.password !== undefined) setAdded({ email: answer.right.person.email, password: answer.right.password })
    setEmail("")
    setName("")
    people.reload()
  }

  const revokeKeys = async (person: Person) => {
    setRevokingKeysOf(null)
    const answer = await api((c) => c.people.revokePersonKeys({ path: { personId: person.personId } }))
    if (Either.isLeft(answer)) return setNotice({ error: answer.left.message })
    const n = answer.right.revokedKeyIds.length
    setNotice({ message: `${n} key${n === 1 ? "" : "s"} of ${person.name} revoked: refused from their next request.` })
    props.onKeysChanged()
  }

  const change = async (person: Person, payload: { readonly role?: Role; readonly disabled?: boolean; readonly slackUserId?: string | null }) => {
    setDisabling(null)
    const answer = await api((c) => c.people.updatePerson({ path: { personId: person.personId }, payload }))
    setNotice(Either.isLeft(answer) ? { error: answer.left.message } : { message: `${person.name} updated.` })
    people.reload()
    // Their keys act with at most their role now.
    props.onKeysChanged()
  }

  return (
    <section aria-labelledby="people-title" class="card">
      <h2 id="people-title">People</h2>
      <form onSubmit={add} class="inline-form" aria-label="Add a person">
        <label class="field"><span>Email</span><input type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} /></label>
        <label class="field"><span>Full name</span><input required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
        <label class="field"><span>Role</span>
          <select value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            {ROLES.map((r) => <option key={r.role} value={r.role}>{r.label}</option>)}
          </select>
        </label>
        <button type="submit" class="primary">Add person</button>
      </form>
      <Notice error={people.error ?? notice.error} message={notice.message} />
      <TableWrap label="People of the workspace">
        <table>
          <caption class="visually-hidden">People of the workspace</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Slack user</th><th scope="col">State</th></tr></thead>
          <tbody>
            {(people.data?.people ?? []).map((person) => {
              const self = person.personId === props.session.me.id
              return (
                <tr key={person.personId}>
                  <th scope="row">{person.name}{self && " (you)"}</th>
                  <td>{person.email}</td>
                  <td>
                    <select aria-label={`Role of ${person.name}`} value={person.role} disabled={self}
                      onChange={(e) => change(person, { role: e.currentTarget.value as Role })}>
                      {ROLES.map((r) => <option key={r.role} value={r.role}>{r.role}</option>)}
                    </select>
                  </td>
                  <td>
                    {/* Saved when the field is left (or Enter): Approve and Reject in Slack act as this person. Uncontrolled,
                        so a reload of the table while someone types (an event arrived) keeps what they typed. */}
                    <input key={person.slackUserId ?? ""} aria-label={`Slack user of ${person.name}`} size={12} placeholder="U024BE7LH"
                      pattern="[UW][A-Z0-9]{2,20}" defaultValue={person.slackUserId ?? ""}
                      onChange={(e) => change(person, { slackUserId: e.currentTarget.value.trim() === "" ? null : e.currentTarget.value.trim() })} />
                  </td>
                  <td>
                    {person.disabledAt === null ? "active " : `disabled ${dateTime(person.disabledAt)} `}
                    {!self && (person.disabledAt === null
                      ? <button type="button" class="danger" aria-label={`Disable ${person.name}`} onClick={() => setDisabling(person)}>Disable…</button>
                      : <button type="button" aria-label={`Enable ${person.name}`} onClick={() => change(person, { disabled: false })}>Enable</button>)}
                    {" "}<button type="button" aria-label={`Revoke keys of ${person.name}`} onClick={() => setRevokingKeysOf(person)}>Revoke keys…</button>
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      </TableWrap>
      {added !== null && (
        <Dialog title="Hand over the password" onClose={() => setAdded(null)}>
          <p>This is the only time acs shows the password of {added.email}. Hand it over; they change it on the Password page.</p>
          <SecretField secret={added.password} />
          <div class="actions"><button type="button" class="primary" onClick={() => setAdded(null)}>Done</button></div>
        </Dialog>
      )}
      {revokingKeysOf !== null && (
        <Dialog title={`Revoke every key of ${revokingKeysOf.name}?`} onClose={() => setRevokingKeysOf(null)}>
          <p>Every key they made, and every key those keys made, is refused from its next request, on every instance. Org keys are not theirs.</p>
          <div class="actions">
            <button type="button" class="danger" onClick={() => revokeKeys(revokingKeysOf)}>Revoke their keys</button>
            <button type="button" onClick={() => setRevokingKeysOf(null)}>Cancel</button>
          </div>
        </Dialog>
      )}
      {disabling !== null && (
        <Dialog title={`Disable ${disabling.name}?`} onClose={() => setDisabling(null)}>
          <p>They are signed out at once and cannot sign in until an admin enables them again. Their keys, and the keys those keys made, are refused
            while they are disabled; revoke them to end them for good.</p>
          <div class="actions">
            <button type="button" class="danger" onClick={() => change(disabling, { disabled: true })}>Disable</button>
            <button type="button" onClick={() => setDisabling(null)}>Cancel</button>
          </div>
        </Dialog>
      )}
    </section>
  )
}
