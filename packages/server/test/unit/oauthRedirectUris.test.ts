/**
 * Which redirect URIs a client may register (docs/decisions/access-and-keys.md "OAuth redirect URIs"): https
 * anywhere, http only on the loopback host, never a fragment, credentials or control characters.
 */
import { Option } from "effect"
import { describe, expect, it } from "vitest"
import { redirectUriRefusal } from "../../src/auth/OAuthClients.ts"

const accepted = (uri: string) => Option.isNone(redirectUriRefusal(uri))

describe("redirect URIs", () => {
  it("accepts https, and http on localhost, 127.0.0.1 and [::1] on any port", () => {
    for (const uri of ["https://claude.ai/api/mcp/auth_callback", "https://app.example.com/cb?x=1", "http://localhost/cb",
      "http://localhost:33418/callback", "http://127.0.0.1:6274/oauth/callback", "http://[::1]:8080/cb"]) {
      expect(accepted(uri), uri).toBe(true)
    }
  })

  it("refuses http elsewhere, look-alike hosts, other schemes, fragments, credentials and control characters", () => {
    for (const uri of ["http://example.com/cb", "http://localhost.evil.example/cb", "http://127.0.0.1.evil.example/cb",
      "javascript:alert(1)", "cursor://callback", "https://app.example.com/cb#x", "https://user:pw@app.example.com/cb",
      "https://app.example.com/c\u0000b", "https://app.example.com/c\nb", "/relative/cb", `https://a.example/${"x".repeat(2001)}`]) {
      expect(accepted(uri), uri).toBe(false)
    }
  })
})
