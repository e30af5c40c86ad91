/**
 * Where a webhook may point (no SSRF): https only, and only public addresses (PublicAddress.ts, which
 * judges the parsed address in every IPv6 form) — every address a name resolves to, checked again at each
 * delivery by the connection's own DNS lookup (so a name that later resolves to a non-public address is refused
 * at that moment, not trusted from the day it was created). WEBHOOK_ALLOW_PRIVATE_NETWORKS=true lifts the rule
 * and also allows http (tests, intranets). A refusal names the URL's host, never what a name resolved to: an
 * admin must not learn the internal network's addresses from it.
 */
import * as Dns from "node:dns"
import * as Net from "node:net"
import { nonPublicRange } from "./PublicAddress.ts"

/** Why `url` cannot be a webhook target, without resolving it; undefined when its form is acceptable. */
export const urlRefusal = (url: string, allowPrivate: boolean): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return "url: not a valid URL"
  }
  if (parsed.protocol !== "https:" && !(allowPrivate && parsed.protocol === "http:")) return "url: must be https"
  if (parsed.username !== "" || parsed.password !== "") return "url: must not carry credentials"
  if (allowPrivate) return undefined
  // The URL parser has normalized the host: IPv4 in any notation is dotted, IPv6 is compressed hex in brackets.
  const host = parsed.hostname.replace(/^\[|\]$/g, "")
  if (Net.isIP(host) !== 0) {
    const range = nonPublicRange(host)
    return range === undefined ? undefined : `url: the host ${parsed.hostname} is not a public address (${range})`
  }
  const name = host.replace(/\.$/, "")
  if (name === "localhost" || name.endsWith(".localhost")) return `url: the host ${parsed.hostname} is not allowed (localhost)`
  return undefined
}

/** Lookup failures that say nothing of the name (the resolver is down or slow): worth trying again. */
const TEMPORARY = new Set(["EAI_AGAIN", "ETIMEOUT"])

/**
 * Resolves `hostname` and refuses it when any of its addresses is not public (unless allowed). A name that
 * does not exist and one that resolves to a non-public address are refused alike, so the refusal tells nothing
 * of the internal network's names either.
 */
export const resolvePublic = (hostname: string, allowPrivate: boolean): Promise<ReadonlyArray<Dns.LookupAddress>> =>
  new Promise((resolve, reject) => {
    const host = hostname.replace(/^\[|\]$/g, "")
    if (Net.isIP(host) !== 0) {
      const range = allowPrivate ? undefined : nonPublicRange(host)
      return range !== undefined
        ? reject(new Error(`the host ${hostname} is not a public address (${range})`))
        : resolve([{ address: host, family: Net.isIP(host) }])
    }
    const notPublic = () => reject(new Error(`the host ${host} ${allowPrivate ? "cannot be resolved" : "does not resolve to a public address"}`))
    Dns.lookup(host, { all: true }, (error, addresses) => {
      if (error !== null) {
        return TEMPORARY.has(error.code ?? "") ? reject(new Error(`the host ${host} cannot be resolved at the moment (${error.code})`)) : notPublic()
      }
      if (addresses.length === 0) return notPublic()
      if (!allowPrivate && addresses.some((a) => nonPublicRange(a.address) !== undefined)) return notPublic()
      resolve(addresses)
    })
  })

/**
 * The `lookup` of the sender's connections (WebhookSender.ts), made with `resolvePublic`: a connection goes
 * only to an address checked at that moment, with no second resolution in between (no DNS rebinding). An IP
 * address in the URL is never looked up; the sender checks it with `urlRefusal` before each attempt.
 */
export const checkedLookup = (allowPrivate: boolean): Net.LookupFunction => (hostname, options, callback) => {
  resolvePublic(hostname, allowPrivate).then(
    (addresses) => {
      if ((options as Dns.LookupAllOptions).all === true) return (callback as unknown as (e: null, a: ReadonlyArray<Dns.LookupAddress>) => void)(null, addresses)
      callback(null, addresses[0]!.address, addresses[0]!.family)
    },
    (error: Error) => callback(Object.assign(error, { code: "EACCES" }), "", 0)
  )
}
