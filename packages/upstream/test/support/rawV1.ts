/** A raw v1 call to the simulator with a fresh token: for the wire checks the client does not expose. */
import { type AppleCredentials, signClientSecret } from "../../src/ClientSecret.ts"
import type { Simulator } from "../../src/simulator/Simulator.ts"

export const rawV1 = async (
  simulator: Simulator,
  method: string,
  path: string,
  account: string | null,
  body?: unknown,
  /** Another API client's than the demo one. */
  credentials: AppleCredentials = simulator.credentials
) => {
  const secret = signClientSecret(credentials, Math.floor(Date.now() / 1000))
  const tokenUrl = new URL(simulator.tokenUrl)
  tokenUrl.search = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: credentials.clientId,
    client_secret: secret,
    scope: "searchadsorg"
  }).toString()
  const token = (await (await fetch(tokenUrl, { method: "POST" })).json()) as { access_token: string }
  const response = await fetch(`${simulator.apiV1Url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token.access_token}`,
      "content-type": "application/json",
      // An account id, or a whole context value (to try other keys).
      ...(account !== null ? { "x-ap-context": account.includes("=") ? account : `adAccountId=${account}` } : {})
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {})
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: (text === "" ? null : JSON.parse(text)) as unknown, text }
}
