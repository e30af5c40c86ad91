/**
 * Every person changes their own password; their other sessions end (`POST /auth/password`). Here too a person links
 * their Slack user (`PUT /auth/slack-user`), so Approve and Reject in Slack act as them.
 */
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { Notice } from "../components.tsx"
import type { Session } from "../session.ts"

const SlackUser = () => {
  const [slackUserId, setSlackUserId] = useState("")
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const save = async (value: string | null) => {
    const answer = await api((c) => c.auth.linkSlackUser({ payload: { slackUserId: value } }))
    if (Either.isLeft(answer)) return setNotice({ error: answer.left.message })
    setSlackUserId(answer.right.slackUserId ?? "")
    setNotice({ message: answer.right.slackUserId === null ? "Your Slack user is unlinked." : `Slack user ${answer.right.slackUserId} is yours now.` })
  }
  return (
    <form onSubmit={(e) => {
      e.preventDefault()
      void save(slackUserId.trim())
    }} class="card narrow" aria-labelledby="slack-title">
      <h2 id="slack-title">Your Slack user</h2>
      <p class="muted">Approve and Reject in Slack act as you once your Slack member ID is linked (Slack profile → ⋮ → Copy member ID).</p>
      <label class="field"><span>Slack member ID</span>
        <input pattern="[UW][A-Z0-9]{2,20}" placeholder="U024BE7LH" required value={slackUserId} onInput={(e) => setSlackUserId(e.currentTarget.value)} />
      </label>
      <button type="submit" class="primary">Link</button>
      <button type="button" onClick={() => void save(null)}>Unlink</button>
      <Notice {...notice} />
    </form>
  )
}

export const PasswordPage = (props: { readonly session: Session }) => {
  const [current, setCurrent] = useState("")
  const [next, setNext] = useState("")
  const [repeat, setRepeat] = useState("")
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})

  const submit = async (event: Event) => {
    event.preventDefault()
    if (next !== repeat) return setNotice({ error: "The new password and its repetition differ." })
    const answer = await api((c) => c.auth.changePassword({ payload: { currentPassword: current, newPassword: next } }))
    if (Either.isLeft(answer)) return setNotice({ error: answer.left.message })
    setCurrent("")
    setNext("")
    setRepeat("")
    setNotice({ message: "Password changed. Every other session of yours was signed out; this one continues." })
  }

  return (
    <section aria-labelledby="password-title">
      <h1 id="password-title">Change your password</h1>
      <form onSubmit={submit} class="card narrow">
        <label class="field"><span>Current password</span>
          <input type="password" autocomplete="current-password" required value={current} onInput={(e) => setCurrent(e.currentTarget.value)} />
        </label>
        <label class="field"><span>New password (at least 12 characters, not a common one)</span>
          <input type="password" autocomplete="new-password" required minLength={12} maxLength={1024} value={next} onInput={(e) => setNext(e.currentTarget.value)} />
        </label>
        <label class="field"><span>New password again</span>
          <input type="password" autocomplete="new-password" required minLength={12} maxLength={1024} value={repeat} onInput={(e) => setRepeat(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary">Change password</button>
        <Notice {...notice} />
      </form>
      {props.session.me.kind === "person" && <SlackUser />}
    </section>
  )
}
