/**
 * The SSRF guard's judgement of an address (webhooks/PublicAddress.ts) and of a URL (webhooks/WebhookTargets.ts),
 * docs/decisions/events-and-webhooks.md: an IPv4 is judged the same in every IPv6 form that translates to it (mapped, NAT64) and however the
 * address is spelled; the forms that only embed one (IPv4-compatible, 6to4, Teredo, local-use NAT64) and the
 * non-global IPv6 ranges are refused whatever they carry; public addresses pass. The IPv4 oracle here is
 * Node's own BlockList over the IANA special-purpose registry, independent of the module's byte matching.
 */
import fc from "fast-check"
import * as Net from "node:net"
import { describe, expect, it } from "vitest"
import { ipv6Bytes, nonPublicRange } from "../../src/webhooks/PublicAddress.ts"
import { urlRefusal } from "../../src/webhooks/WebhookTargets.ts"

const reference = new Net.BlockList()
for (const [network, prefix] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.88.99.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15],
  ["198.51.100.0", 24], ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4]
] as const) reference.addSubnet(network, prefix, "ipv4")

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((parts) => parts.join("."))
/** Biased towards the special ranges' neighbourhoods, where a boundary error would show. */
const nearRanges = fc.oneof(
  ipv4,
  fc.tuple(fc.constantFrom(0, 10, 100, 127, 169, 172, 192, 198, 203, 223, 224, 239, 240, 255), fc.nat(255), fc.nat(255), fc.nat(255))
    .map((parts) => parts.join("."))
)
const publicIpv4 = nearRanges.filter((a) => !reference.check(a, "ipv4"))
const privateIpv4 = nearRanges.filter((a) => reference.check(a, "ipv4"))

const hex16 = (a: number, b: number) => ((a << 8) | b).toString(16)
const v4 = (address: string) => address.split(".").map(Number) as [number, number, number, number]
/** The last 32 bits of an IPv6 address as two hex groups. */
const tail = (address: string) => {
  const [a, b, c, d] = v4(address)
  return `${hex16(a, b)}:${hex16(c, d)}`
}
/** What the URL parser makes of an IPv6 address (the form a webhook URL's host arrives in). */
const normalized = (address: string) => new URL(`https://[${address}]/`).hostname.slice(1, -1)
/** The uncompressed, zero-padded, upper-case spelling. */
const full = (address: string) => {
  const bytes = ipv6Bytes(address)!
  return Array.from({ length: 8 }, (_, i) => hex16(bytes[2 * i]!, bytes[2 * i + 1]!).padStart(4, "0")).join(":").toUpperCase()
}
/** A random IPv6 address inside `prefix/bits`. */
const inside = (prefix: string, bits: number) =>
  fc.uint8Array({ minLength: 16, maxLength: 16 }).map((random) => {
    const network = ipv6Bytes(prefix)!
    const bytes = random.map((byte, i) => {
      const fixed = Math.max(0, Math.min(8, bits - 8 * i))
      const mask = (0xff << (8 - fixed)) & 0xff
      return (network[i]! & mask) | (byte & ~mask & 0xff)
    })
    return Array.from({ length: 8 }, (_, i) => hex16(bytes[2 * i]!, bytes[2 * i + 1]!)).join(":")
  })

describe("an IPv4 address", () => {
  it("is refused exactly when the IANA registry says it is not globally reachable", () => {
    fc.assert(fc.property(nearRanges, (address) => (nonPublicRange(address) !== undefined) === reference.check(address, "ipv4")), { numRuns: 5_000 })
  })

  it("is judged at the ranges' edges", () => {
    for (const address of ["100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0", "169.253.255.255", "192.167.255.255",
      "198.17.255.255", "198.20.0.0", "223.255.255.255", "1.1.1.1", "8.8.8.8"]) expect(nonPublicRange(address), address).toBeUndefined()
    expect(nonPublicRange("0.0.0.0")).toMatch(/unspecified/)
    expect(nonPublicRange("100.64.0.0")).toMatch(/carrier-grade NAT/)
    expect(nonPublicRange("100.127.255.255")).toMatch(/carrier-grade NAT/)
    expect(nonPublicRange("127.3.2.1")).toMatch(/loopback/)
    expect(nonPublicRange("169.254.169.254")).toMatch(/link-local/)
    expect(nonPublicRange("172.31.255.255")).toMatch(/private/)
    expect(nonPublicRange("224.0.0.1")).toMatch(/multicast/)
    expect(nonPublicRange("239.255.255.250")).toMatch(/multicast/)
    expect(nonPublicRange("255.255.255.255")).toMatch(/reserved/)
  })
})

describe("an IPv6 address that translates an IPv4", () => {
  it("IPv4-mapped (::ffff:0:0/96) is judged by its IPv4, however it is spelled", () => {
    fc.assert(fc.property(nearRanges, (address) => {
      const verdict = nonPublicRange(address) === undefined
      return [`::ffff:${address}`, `::ffff:${tail(address)}`, `0:0:0:0:0:FFFF:${address}`, normalized(`::ffff:${address}`)]
        .every((form) => (nonPublicRange(form) === undefined) === verdict)
    }), { numRuns: 2_000 })
    expect(nonPublicRange("::ffff:127.0.0.1")).toBe("IPv4-mapped loopback (127.0.0.0/8)")
  })

  it("NAT64 (64:ff9b::/96) is judged by its IPv4: a public one passes (DNS64 answers so on IPv6-only networks)", () => {
    fc.assert(fc.property(nearRanges, (address) =>
      [`64:ff9b::${address}`, `64:ff9b::${tail(address)}`, normalized(`64:ff9b::${address}`)]
        .every((form) => (nonPublicRange(form) === undefined) === (nonPublicRange(address) === undefined))), { numRuns: 2_000 })
    expect(nonPublicRange("64:ff9b::8.8.8.8")).toBeUndefined()
    expect(nonPublicRange("64:ff9b::169.254.169.254")).toBe("NAT64 link-local (169.254.0.0/16)")
  })
})

describe("an IPv6 address that only embeds an IPv4", () => {
  it("is refused whatever the IPv4, public or not", () => {
    fc.assert(fc.property(fc.oneof(publicIpv4, privateIpv4), (address) => {
      const [a, b, c, d] = v4(address)
      return [
        [`::${address}`, /IPv4-compatible/],
        [normalized(`::${address}`), /IPv4-compatible|unspecified|loopback/],
        [`::ffff:0:${address}`, /IPv4-translated/],
        [`64:ff9b:1:${hex16(a, b)}:${hex16(c, d)}::`, /local-use NAT64/],
        [`64:ff9b:1::${address}`, /local-use NAT64/],
        [`2002:${tail(address)}::1`, /6to4/],
        // Teredo: server IPv4 in bits 32-63, the client's IPv4 obfuscated (every bit flipped) in the last 32.
        [`2001:0:${tail(address)}:8000:ffff:${hex16(a ^ 0xff, b ^ 0xff)}:${hex16(c ^ 0xff, d ^ 0xff)}`, /Teredo/]
      ].every(([form, range]) => (range as RegExp).test(nonPublicRange(form as string) ?? ""))
    }), { numRuns: 2_000 })
    expect(nonPublicRange("::127.0.0.1")).toBe("IPv4-compatible (::/96, deprecated)")
    expect(nonPublicRange(normalized("::127.0.0.1"))).toBe("IPv4-compatible (::/96, deprecated)")
  })
})

describe("the other IPv6 ranges", () => {
  const refused: ReadonlyArray<readonly [string, number, RegExp]> = [
    ["fc00::", 7, /unique local/],
    ["fec0::", 10, /site-local/],
    ["fe80::", 10, /link-local/],
    ["ff00::", 8, /multicast/],
    ["2001:db8::", 32, /documentation/],
    ["2001::", 23, /Teredo|IETF protocol assignments/],
    ["100::", 64, /discard-only/],
    ["3fff::", 20, /documentation/],
    ["5f00::", 16, /segment routing/],
    // Holds 5f00::/16, which answers with its own name.
    ["4000::", 2, /outside global unicast|segment routing/],
    ["::", 3, /outside global unicast|IPv4|unspecified|loopback/]
  ]
  for (const [prefix, bits, range] of refused) {
    it(`refuses ${prefix}/${bits}, in every spelling`, () => {
      fc.assert(fc.property(inside(prefix, bits), (address) =>
        [address, normalized(address), full(address), `${address}%eth0`].every((form) => range.test(nonPublicRange(form) ?? ""))))
    })
  }

  it("refuses the unspecified and loopback addresses and anything that is not an address", () => {
    expect(nonPublicRange("::")).toBe("unspecified (::)")
    expect(nonPublicRange("0:0:0:0:0:0:0:0")).toBe("unspecified (::)")
    expect(nonPublicRange("::1")).toBe("loopback (::1)")
    expect(nonPublicRange("0000:0000:0000:0000:0000:0000:0000:0001")).toBe("loopback (::1)")
    for (const garbage of ["", "localhost", "127.1", "1.2.3.4.5", "::g", "[::1]"]) expect(nonPublicRange(garbage)).toBe("not an IP address")
  })

  it("passes global unicast outside the special ranges", () => {
    for (const address of ["2606:4700:4700::1111", "2a00:1450:4001:82a::200e", "2001:4860:4860::8888", "2c0f:fb50::1"]) {
      expect(nonPublicRange(address), address).toBeUndefined()
      expect(nonPublicRange(full(address)), address).toBeUndefined()
    }
    const special = ["2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20"].map((cidr) => cidr.split("/") as [string, string])
    const specialList = new Net.BlockList()
    for (const [network, bits] of special) specialList.addSubnet(network, Number(bits), "ipv6")
    fc.assert(fc.property(inside("2000::", 3).filter((a) => !specialList.check(a, "ipv6")), (address) => nonPublicRange(address) === undefined))
  })
})

describe("a webhook URL", () => {
  it("is refused for a host that is not a public address, in any of its forms, naming the URL's host only", () => {
    for (const [url, range] of [
      ["https://[::127.0.0.1]/x", /IPv4-compatible/],
      ["https://[::ffff:127.0.0.1]/x", /IPv4-mapped loopback/],
      ["https://[::ffff:a9fe:a9fe]/x", /IPv4-mapped link-local/],
      ["https://[64:ff9b::10.0.0.1]/x", /NAT64 private/],
      ["https://[64:ff9b:1::a00:1]/x", /local-use NAT64/],
      ["https://[2002:7f00:1::1]/x", /6to4/],
      ["https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x", /Teredo/],
      ["https://[fd00::1]/x", /unique local/],
      ["https://[fec0::1]/x", /site-local/],
      ["https://[ff02::1]/x", /multicast/],
      ["https://[::]/x", /unspecified/],
      ["https://0.0.0.0/x", /unspecified/],
      ["https://224.0.0.251/x", /multicast/],
      ["https://100.64.0.1/x", /carrier-grade NAT/],
      ["https://2130706433/x", /loopback/],
      ["https://0x7f.1/x", /loopback/]
    ] as const) {
      const refusal = urlRefusal(url, false)
      expect(refusal, url).toMatch(range)
      expect(refusal, url).toMatch(/^url: the host \S+ is not a public address/)
    }
    expect(urlRefusal("https://localhost./x", false)).toMatch(/localhost/)
    expect(urlRefusal("https://[2606:4700:4700::1111]/x", false)).toBeUndefined()
    expect(urlRefusal("https://[64:ff9b::808:808]/x", false)).toBeUndefined()
    expect(urlRefusal("https://hooks.example.com/x", false)).toBeUndefined()
    expect(urlRefusal("https://[::127.0.0.1]/x", true)).toBeUndefined()
  })
})
