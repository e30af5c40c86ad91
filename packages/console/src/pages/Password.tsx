/** Every person changes their own password; their other sessions end (`POST /auth/password`). */
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { Notice } from "../components.tsx"

export const PasswordPage = () => {
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
    </section>
  )
}
