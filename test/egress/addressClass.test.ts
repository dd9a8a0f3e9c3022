import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyAddress, isPublicAddress } from '../../shared/egress/addressClass';

const refused: [string, string][] = [
  ['127.0.0.1', 'IPv4 loopback'],
  ['127.255.255.254', 'the top of 127/8'],
  ['0.0.0.0', 'the IPv4 unspecified address'],
  ['0.1.2.3', '0/8 ("this network")'],
  ['10.0.0.1', '10/8'],
  ['10.255.255.255', 'the top of 10/8'],
  ['172.16.0.1', '172.16/12'],
  ['172.31.255.255', 'the top of 172.16/12'],
  ['192.168.1.1', '192.168/16'],
  ['169.254.169.254', 'the cloud metadata address'],
  ['169.254.0.1', 'IPv4 link-local'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.127.255.255', 'the top of carrier-grade NAT'],
  ['224.0.0.1', 'IPv4 multicast'],
  ['239.255.255.250', 'SSDP multicast'],
  ['255.255.255.255', 'limited broadcast'],
  ['240.0.0.1', 'reserved 240/4'],
  ['192.0.0.1', 'IETF protocol assignments 192.0.0/24'],
  ['192.0.2.1', 'TEST-NET-1'],
  ['198.51.100.1', 'TEST-NET-2'],
  ['203.0.113.1', 'TEST-NET-3'],
  ['198.18.0.1', 'benchmarking 198.18/15'],
  ['198.19.255.255', 'the top of benchmarking'],
  ['192.88.99.1', 'the deprecated 6to4 relay anycast'],
  ['::1', 'IPv6 loopback'],
  ['::', 'the IPv6 unspecified address'],
  ['fe80::1', 'IPv6 link-local'],
  ['fe80::1%eth0', 'IPv6 link-local with a zone'],
  ['febf:ffff::1', 'the top of fe80::/10'],
  ['fc00::1', 'unique-local fc00::/7'],
  ['fd12:3456:789a::1', 'unique-local fd00::/8'],
  ['fec0::1', 'deprecated site-local'],
  ['ff02::1', 'IPv6 multicast'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback in hex'],
  ['::ffff:169.254.169.254', 'IPv4-mapped metadata address'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated loopback (RFC 6145)'],
  ['64:ff9b::127.0.0.1', 'NAT64 of loopback'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata address'],
  ['64:ff9b::10.1.2.3', 'NAT64 of a private address'],
  ['64:ff9b:1::1', 'local-use NAT64 64:ff9b:1::/48'],
  ['2002:7f00:1::1', '6to4 of loopback'],
  ['2002:a9fe:a9fe::', '6to4 of the metadata address'],
  ['2002:c0a8:101::1', '6to4 of 192.168.1.1'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['2001:db8::1', 'IPv6 documentation'],
  ['3fff::1', 'IPv6 documentation 3fff::/20'],
  ['2001:2::1', 'IPv6 benchmarking'],
  ['100::1', 'the IPv6 discard prefix'],
  ['::127.0.0.1', 'deprecated IPv4-compatible loopback'],
  ['::8.8.8.8', 'deprecated IPv4-compatible public'],
  ['4000::1', 'unallocated IPv6 outside 2000::/3'],
  ['5f00::1', 'SRv6 SIDs'],
];

const allowed: [string, string][] = [
  ['8.8.8.8', 'a public resolver'],
  ['1.1.1.1', 'another public resolver'],
  ['93.184.215.14', 'a public web server'],
  ['172.15.255.255', 'just below 172.16/12'],
  ['172.32.0.1', 'just above 172.16/12'],
  ['100.63.255.255', 'just below carrier-grade NAT'],
  ['100.128.0.1', 'just above carrier-grade NAT'],
  ['169.253.255.255', 'just below link-local'],
  ['11.0.0.1', 'just above 10/8'],
  ['223.255.255.254', 'just below multicast'],
  ['2606:4700:4700::1111', 'public IPv6'],
  ['2a00:1450:4001:830::200e', 'another public IPv6'],
  ['::ffff:8.8.8.8', 'IPv4-mapped public'],
  ['64:ff9b::8.8.8.8', 'NAT64 of a public address'],
  ['2002:808:808::1', '6to4 of a public address'],
];

describe('isPublicAddress', () => {
  it.each(refused)('refuses %s (%s)', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });

  it.each(allowed)('allows %s (%s)', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
  });

  it.each(['127.1', '0x7f000001', '2130706433', '0177.0.0.1', 'localhost', '', 'not an ip', '1.2.3.4.5'])(
    'refuses %j, which is not a canonical address',
    (input) => {
      expect(isPublicAddress(input)).toBe(false);
    },
  );

  it('names the range of a refused address', () => {
    expect(classifyAddress('169.254.169.254')).toBe('linkLocal');
    expect(classifyAddress('::ffff:10.0.0.1')).toBe('ipv4Mapped of private');
    expect(classifyAddress('8.8.8.8')).toBe('public');
  });
});

const octet = fc.integer({ min: 0, max: 255 });
const v4 = (a: number, b: number, c: number, d: number) => `${a}.${b}.${c}.${d}`;

/** Random IPv4 addresses inside one CIDR block. */
function inBlock(base: [number, number, number, number], prefix: number): fc.Arbitrary<string> {
  const start = ((base[0] << 24) | (base[1] << 16) | (base[2] << 8) | base[3]) >>> 0;
  const size = 2 ** (32 - prefix);
  return fc.integer({ min: 0, max: size - 1 }).map((offset) => {
    const n = (start + offset) >>> 0;
    return v4(n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255);
  });
}

const privateV4 = fc.oneof(
  inBlock([0, 0, 0, 0], 8),
  inBlock([10, 0, 0, 0], 8),
  inBlock([100, 64, 0, 0], 10),
  inBlock([127, 0, 0, 0], 8),
  inBlock([169, 254, 0, 0], 16),
  inBlock([172, 16, 0, 0], 12),
  inBlock([192, 168, 0, 0], 16),
  inBlock([198, 18, 0, 0], 15),
  inBlock([224, 0, 0, 0], 4),
  inBlock([240, 0, 0, 0], 4),
);

/** Public IPv4: the first octet avoids every special /8-or-wider block; the rest is free. */
const publicV4 = fc
  .tuple(
    fc.integer({ min: 1, max: 223 }).filter((a) => ![10, 100, 127, 169, 172, 192, 198, 203].includes(a)),
    octet,
    octet,
    octet,
  )
  .map(([a, b, c, d]) => v4(a, b, c, d));

const hextet = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));

/** Public IPv6 in 2400:: .. 2cff:: (regional registries), clear of 2001::/16, 2002::/16 and AS112's 2620:4f:8000::/48. */
const publicV6 = fc
  .tuple(
    fc.integer({ min: 0x2400, max: 0x2cff }).filter((first) => first !== 0x2620),
    fc.array(hextet, { minLength: 7, maxLength: 7 }),
  )
  .map(([first, rest]) => [first.toString(16), ...rest].join(':'));

const privateV6 = fc
  .oneof(
    fc.tuple(fc.integer({ min: 0xfc00, max: 0xfdff }), fc.array(hextet, { minLength: 7, maxLength: 7 })),
    fc.tuple(fc.integer({ min: 0xfe80, max: 0xfebf }), fc.array(hextet, { minLength: 7, maxLength: 7 })),
    fc.tuple(fc.integer({ min: 0xff00, max: 0xffff }), fc.array(hextet, { minLength: 7, maxLength: 7 })),
  )
  .map(([first, rest]) => [first.toString(16), ...rest].join(':'));

describe('isPublicAddress, by property', () => {
  it('allows every random public IPv4 address', () => {
    fc.assert(fc.property(publicV4, (ip) => isPublicAddress(ip)));
  });

  it('refuses every random address inside a private or reserved IPv4 block', () => {
    fc.assert(fc.property(privateV4, (ip) => !isPublicAddress(ip)));
  });

  it('allows every random global unicast IPv6 address', () => {
    fc.assert(fc.property(publicV6, (ip) => isPublicAddress(ip)));
  });

  it('refuses every random unique-local, link-local or multicast IPv6 address', () => {
    fc.assert(fc.property(privateV6, (ip) => !isPublicAddress(ip)));
  });

  it('judges IPv4-mapped, NAT64 and 6to4 forms exactly like the IPv4 address they embed', () => {
    fc.assert(
      fc.property(fc.oneof(publicV4, privateV4), (ip) => {
        const [a = 0, b = 0, c = 0, d = 0] = ip.split('.').map(Number);
        const hi = ((a << 8) | b).toString(16);
        const lo = ((c << 8) | d).toString(16);
        const expected = isPublicAddress(ip);
        return (
          isPublicAddress(`::ffff:${ip}`) === expected &&
          isPublicAddress(`64:ff9b::${ip}`) === expected &&
          isPublicAddress(`2002:${hi}:${lo}::1`) === expected
        );
      }),
    );
  });
});
