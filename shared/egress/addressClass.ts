import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Classifies one resolved IP address. Only globally routable unicast is 'public'; everything else is named by its
 * range so refusals can say why. IPv6 forms that embed an IPv4 address a gateway would reach (IPv4-mapped,
 * IPv4-translated, NAT64 well-known prefix, 6to4) are judged by that embedded address.
 *
 * The input must be a canonical address (what DNS or the WHATWG URL parser hands us). Node's strict `isIP` gates it
 * first because `ipaddr.js` also accepts legacy shorthand such as `127.1` or `0x7f.1`.
 */
export function classifyAddress(ip: string): string {
  const address = parseAddress(ip);
  return address ? classify(address) : 'invalid';
}

/**
 * Canonical text of an address, for comparing destinations: IPv6 compressed, IPv4-mapped IPv6 folded to IPv4 (it is
 * the same destination). Undefined when `ip` is not a canonical address.
 */
export function canonicalAddress(ip: string): string | undefined {
  const address = parseAddress(ip);
  if (address?.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (address as ipaddr.IPv6).toIPv4Address().toString();
  }
  return address?.toString();
}

function parseAddress(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const kind = isIP(ip);
  if (kind === 4) return ipaddr.IPv4.parse(ip);
  if (kind !== 6) return undefined;
  // ipaddr.js reads "::a.b.c.d" (IPv4-compatible, which inet_ntop prints) as IPv4-mapped; the WHATWG URL parser
  // gives the true hextets. The zone of a scoped address does not change its class.
  const zone = ip.indexOf('%');
  const bare = zone === -1 ? ip : ip.slice(0, zone);
  try {
    return ipaddr.IPv6.parse(new URL(`http://[${bare}]/`).hostname.slice(1, -1));
  } catch {
    return undefined;
  }
}

/**
 * The IPv4 address an IPv6 address embeds and a translator or tunnel would deliver to (IPv4-mapped and -translated,
 * the NAT64 well-known prefix, 6to4); undefined for any other.
 */
export function embeddedAddress(ip: string): string | undefined {
  const address = parseAddress(ip);
  if (address?.kind() !== 'ipv6') return undefined;
  const v6 = address as ipaddr.IPv6;
  return embeddedIPv4(v6, v6.range())?.toString();
}

/** True only for globally routable unicast addresses: the only ones a customer's page may reach. */
export function isPublicAddress(ip: string): boolean {
  return classifyAddress(ip) === 'public';
}

function classify(address: ipaddr.IPv4 | ipaddr.IPv6): string {
  if (address.kind() === 'ipv4') {
    const range = (address as ipaddr.IPv4).range();
    // as112 and amt are anycast infrastructure, not customer pages; refusing them costs nothing.
    return range === 'unicast' ? 'public' : range;
  }
  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  const embedded = embeddedIPv4(v6, range);
  if (embedded) {
    const inner = classify(embedded);
    return inner === 'public' ? 'public' : `${range} of ${inner}`;
  }
  if (range !== 'unicast') return range;
  // ipaddr.js calls anything it has no name for 'unicast'; only 2000::/3 is allocated as global unicast
  // (this also refuses deprecated IPv4-compatible ::a.b.c.d and unallocated space).
  const first = v6.parts[0] ?? 0;
  return (first & 0xe000) === 0x2000 ? 'public' : 'reserved';
}

/** The IPv4 address a translator or tunnel would deliver to, for the prefixes that have one. */
function embeddedIPv4(v6: ipaddr.IPv6, range: string): ipaddr.IPv4 | undefined {
  const p = v6.parts;
  const word = (i: number): number => p[i] ?? 0;
  const fromWords = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (range) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
      return fromWords(word(6), word(7));
    case 'rfc6052':
      // Well-known NAT64 prefix 64:ff9b::/96 embeds the target in the last 32 bits. The local-use 64:ff9b:1::/48
      // has operator-defined layout: no embedded address, so it stays refused as 'rfc6052'.
      return word(2) === 0 && word(3) === 0 && word(4) === 0 && word(5) === 0
        ? fromWords(word(6), word(7))
        : undefined;
    case '6to4': // 2002:AABB:CCDD::/48
      return fromWords(word(1), word(2));
    default:
      // Teredo (2001::/32) obfuscates its client address and relays through anything; it stays refused.
      return undefined;
  }
}
