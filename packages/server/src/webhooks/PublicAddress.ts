/**
 * Whether an IP address is public, judged on the parsed address (16 bytes for IPv6), never on its spelling, so
 * `::7f00:1`, `::127.0.0.1` and `0:0:0:0:0:0:7f00:1` are the same address. The IPv4 ranges are the IANA
 * special-purpose registry's ones that are not globally reachable. An IPv6 address is public only in global
 * unicast (2000::/3) outside its special ranges, or when it is a working translation of a public IPv4: IPv4-mapped
 * (::ffff:0:0/96) and the well-known NAT64 prefix (64:ff9b::/96, what DNS64 answers on an IPv6-only network)
 * are judged by the IPv4 they carry. The other forms that embed an IPv4 are refused whole, whatever that IPv4:
 * IPv4-compatible (deprecated), IPv4-translated, local-use NAT64 (64:ff9b:1::/48, where the IPv4 sits at an
 * operator-chosen place), 6to4 (2002::/16, deprecated) and Teredo (2001::/32, a NAT traversal for clients). See
 * docs/decisions/events-and-webhooks.md.
 */
import * as Net from "node:net"

type Range = readonly [name: string, network: Uint8Array, prefixBits: number]

const v4Bytes = (address: string): Uint8Array => Uint8Array.from(address.split(".").map(Number))

/** The 16 bytes of an IPv6 address (a zone index, `%eth0`, is dropped); undefined when it is not one. */
export const ipv6Bytes = (address: string): Uint8Array | undefined => {
  const bare = address.replace(/%.*$/, "")
  if (!Net.isIPv6(bare)) return undefined
  // A dotted IPv4 tail is the last two groups.
  const tail = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(bare)
  const quad = tail === null ? undefined : v4Bytes(tail[2]!)
  const hex = tail === null || quad === undefined
    ? bare
    : `${tail[1]}${((quad[0]! << 8) | quad[1]!).toString(16)}:${((quad[2]! << 8) | quad[3]!).toString(16)}`
  const [head, rest] = hex.split("::") as [string, string | undefined]
  const groups = (part: string | undefined) => (part === undefined || part === "" ? [] : part.split(":"))
  const left = groups(head)
  const right = groups(rest)
  const all = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right]
  const bytes = new Uint8Array(16)
  all.forEach((group, i) => {
    const value = parseInt(group, 16)
    bytes[2 * i] = value >> 8
    bytes[2 * i + 1] = value & 0xff
  })
  return bytes
}

const cidr = (network: string): Uint8Array => (Net.isIPv4(network) ? v4Bytes(network) : ipv6Bytes(network)!)

const within = (address: Uint8Array, network: Uint8Array, prefixBits: number): boolean => {
  for (let bit = 0; bit < prefixBits; bit += 8) {
    const mask = prefixBits - bit >= 8 ? 0xff : (0xff << (8 - (prefixBits - bit))) & 0xff
    if ((address[bit / 8]! & mask) !== (network[bit / 8]! & mask)) return false
  }
  return true
}

const ranges = (list: ReadonlyArray<readonly [string, string, number]>): ReadonlyArray<Range> =>
  list.map(([name, network, prefixBits]) => [name, cidr(network), prefixBits] as const)

const IPV4: ReadonlyArray<Range> = ranges([
  ["unspecified and this network (0.0.0.0/8)", "0.0.0.0", 8],
  ["private (10.0.0.0/8)", "10.0.0.0", 8],
  ["carrier-grade NAT (100.64.0.0/10)", "100.64.0.0", 10],
  ["loopback (127.0.0.0/8)", "127.0.0.0", 8],
  ["link-local (169.254.0.0/16)", "169.254.0.0", 16],
  ["private (172.16.0.0/12)", "172.16.0.0", 12],
  ["IETF protocol assignments (192.0.0.0/24)", "192.0.0.0", 24],
  ["documentation (192.0.2.0/24)", "192.0.2.0", 24],
  ["6to4 relay anycast (192.88.99.0/24)", "192.88.99.0", 24],
  ["private (192.168.0.0/16)", "192.168.0.0", 16],
  ["benchmarking (198.18.0.0/15)", "198.18.0.0", 15],
  ["documentation (198.51.100.0/24)", "198.51.100.0", 24],
  ["documentation (203.0.113.0/24)", "203.0.113.0", 24],
  ["multicast (224.0.0.0/4)", "224.0.0.0", 4],
  ["reserved (240.0.0.0/4)", "240.0.0.0", 4]
])

/** Judged by the IPv4 in their last 32 bits. */
const TRANSLATIONS: ReadonlyArray<Range> = ranges([
  ["IPv4-mapped", "::ffff:0:0", 96],
  ["NAT64", "64:ff9b::", 96]
])

/** Refused whole, in this order (the narrower name first). */
const IPV6: ReadonlyArray<Range> = ranges([
  ["unspecified (::)", "::", 128],
  ["loopback (::1)", "::1", 128],
  ["IPv4-compatible (::/96, deprecated)", "::", 96],
  ["IPv4-translated (::ffff:0:0:0/96)", "::ffff:0:0:0", 96],
  ["local-use NAT64 (64:ff9b:1::/48)", "64:ff9b:1::", 48],
  ["discard-only (100::/64)", "100::", 64],
  ["Teredo (2001::/32)", "2001::", 32],
  ["IETF protocol assignments (2001::/23)", "2001::", 23],
  ["documentation (2001:db8::/32)", "2001:db8::", 32],
  ["6to4 (2002::/16)", "2002::", 16],
  ["documentation (3fff::/20)", "3fff::", 20],
  ["segment routing (5f00::/16)", "5f00::", 16],
  ["unique local (fc00::/7)", "fc00::", 7],
  ["link-local (fe80::/10)", "fe80::", 10],
  ["site-local (fec0::/10, deprecated)", "fec0::", 10],
  ["multicast (ff00::/8)", "ff00::", 8]
])

const GLOBAL_UNICAST = cidr("2000::")

const rangeOf = (address: Uint8Array, list: ReadonlyArray<Range>): string | undefined =>
  list.find(([, network, prefixBits]) => within(address, network, prefixBits))?.[0]

/**
 * The non-public range `address` (an IPv4 or IPv6 address as text) falls in, e.g. `loopback (127.0.0.0/8)` or
 * `IPv4-mapped loopback (127.0.0.0/8)`; undefined when it is public. Anything that is not an IP address is
 * not public.
 */
export const nonPublicRange = (address: string): string | undefined => {
  if (Net.isIPv4(address)) return rangeOf(v4Bytes(address), IPV4)
  const bytes = ipv6Bytes(address)
  if (bytes === undefined) return "not an IP address"
  const translation = rangeOf(bytes, TRANSLATIONS)
  if (translation !== undefined) {
    const embedded = rangeOf(bytes.subarray(12), IPV4)
    return embedded === undefined ? undefined : `${translation} ${embedded}`
  }
  return rangeOf(bytes, IPV6) ?? (within(bytes, GLOBAL_UNICAST, 3) ? undefined : "outside global unicast (2000::/3)")
}
