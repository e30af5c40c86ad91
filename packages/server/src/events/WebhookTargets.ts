/**
 * Where a webhook may point (no SSRF): https only, and only public addresses — every address a name resolves
 * to, checked again at each delivery by the connection's own DNS lookup (so a name that later resolves to a
 * private address is refused at that moment, not trusted from the day it was created). Loopback, private,
 * link-local, carrier-grade NAT, multicast and reserved ranges are refused unless
 * WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, which also allows http (tests, intranets).
 */
import * as Dns from "node:dns"
import * as Net from "node:net"

const blocked = new Net.BlockList()
for (const [network, prefix] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["198.51.100.0", 24],
  ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4]
] as const) blocked.addSubnet(network, prefix, "ipv4")
for (const [network, prefix] of [
  ["::", 128], ["::1", 128], ["fc00::", 7], ["fe80::", 10], ["ff00::", 8], ["2001:db8::", 32], ["64:ff9b::", 96], ["100::", 64]
] as const) blocked.addSubnet(network, prefix, "ipv6")

/** True for an address no webhook may reach by default (an IPv4-mapped IPv6 address counts as its IPv4). */
export const isPrivateAddress = (address: string): boolean => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped !== null) return blocked.check(mapped[1]!, "ipv4")
  const family = Net.isIP(address)
  if (family === 0) return true
  return blocked.check(address, family === 4 ? "ipv4" : "ipv6")
}

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
  const host = parsed.hostname.replace(/^\[|\]$/g, "")
  if (!allowPrivate && Net.isIP(host) !== 0 && isPrivateAddress(host)) {
    return `url: ${host} is a private, loopback or link-local address`
  }
  if (!allowPrivate && (host === "localhost" || host.endsWith(".localhost"))) return "url: localhost is not reachable from acs"
  return undefined
}

/** Resolves `hostname` and refuses it when any of its addresses is private (unless allowed). */
export const resolvePublic = (hostname: string, allowPrivate: boolean): Promise<ReadonlyArray<Dns.LookupAddress>> =>
  new Promise((resolve, reject) => {
    const host = hostname.replace(/^\[|\]$/g, "")
    if (Net.isIP(host) !== 0) {
      return !allowPrivate && isPrivateAddress(host)
        ? reject(new Error(`${host} is a private, loopback or link-local address`))
        : resolve([{ address: host, family: Net.isIP(host) }])
    }
    Dns.lookup(host, { all: true }, (error, addresses) => {
      if (error !== null) return reject(new Error(`cannot resolve ${host}: ${error.code ?? error.message}`))
      const refused = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address))
      if (refused !== undefined) return reject(new Error(`${host} resolves to ${refused.address}, a private, loopback or link-local address`))
      if (addresses.length === 0) return reject(new Error(`cannot resolve ${host}`))
      resolve(addresses)
    })
  })

/**
 * A `lookup` for node's http(s) request that resolves with `resolvePublic`: the connection goes only to an
 * address that was checked, with no second resolution in between (no DNS rebinding).
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
