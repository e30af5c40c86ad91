/**
 * The client address used for the per-address sign-in bucket. Behind a reverse proxy every socket comes
 * from the proxy, so all users would share one bucket; with TRUST_PROXY=true the address is the last
 * `X-Forwarded-For` entry, the one the trusted proxy itself appended (earlier entries are whatever the
 * client sent, and spoofable). With it off (the default) the header is ignored: anyone can send it.
 */
import type { HttpServerRequest } from "@effect/platform"
import { Config, Option } from "effect"

export const TrustProxy = Config.boolean("TRUST_PROXY").pipe(Config.withDefault(false))

export const clientAddress = (request: HttpServerRequest.HttpServerRequest, trustProxy: boolean): string => {
  if (trustProxy) {
    // Node joins repeated X-Forwarded-For headers with ", ", so the last entry is the proxy's either way.
    const entries = (request.headers["x-forwarded-for"] ?? "").split(",").map((entry) => entry.trim()).filter((entry) => entry.length > 0)
    const last = entries[entries.length - 1]
    if (last !== undefined) return last
  }
  return Option.getOrElse(request.remoteAddress, () => "unknown")
}
