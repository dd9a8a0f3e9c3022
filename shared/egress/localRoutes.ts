import { readFile } from 'node:fs/promises';
import ipaddr from 'ipaddr.js';

/** A prefix the kernel delivers to this machine: an address of its own, or a local route (AnyIP). */
type LocalPrefix = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** The kernel's routing tables change rarely: read at most once a second. */
const FRESH_MS = 1_000;
/** `RTF_LOCAL` in /proc/net/ipv6_route's flags. */
const RTF_LOCAL = 0x80000000;

let cached: { at: number; prefixes: Promise<LocalPrefix[] | undefined> } | undefined;

/**
 * Whether `address` lies in one of the kernel's local routes (Linux: /proc/net/fib_trie for IPv4, /proc/net/ipv6_route
 * for IPv6), or undefined where neither table can be read. A route's type says it, whatever source address it
 * prefers (red team: `ip route add local X dev lo src Y`, and IPv6 AnyIP routes, gave a UDP socket another source).
 */
export async function inLocalRoute(address: string): Promise<boolean | undefined> {
  const now = Date.now();
  if (!cached || now - cached.at > FRESH_MS) cached = { at: now, prefixes: readLocalPrefixes() };
  const prefixes = await cached.prefixes;
  if (!prefixes) return undefined;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return false;
  }
  return prefixes.some(
    ([prefix, bits]) => prefix.kind() === parsed.kind() && parsed.match(prefix as never, bits),
  );
}

/** The local prefixes of both tables; undefined when neither can be read (not Linux). */
async function readLocalPrefixes(): Promise<LocalPrefix[] | undefined> {
  const [v4, v6] = await Promise.all([
    readFile('/proc/net/fib_trie', 'utf8').catch(() => undefined),
    readFile('/proc/net/ipv6_route', 'utf8').catch(() => undefined),
  ]);
  if (v4 === undefined && v6 === undefined) return undefined;
  return [...ipv4LocalPrefixes(v4 ?? ''), ...ipv6LocalPrefixes(v6 ?? '')];
}

/** `|-- a.b.c.d` followed by `/n host LOCAL`: a local prefix of the trie. */
export function ipv4LocalPrefixes(trie: string): LocalPrefix[] {
  const prefixes: LocalPrefix[] = [];
  let address: string | undefined;
  for (const line of trie.split('\n')) {
    const leaf = /\|-- (\d+\.\d+\.\d+\.\d+)\s*$/.exec(line);
    if (leaf) {
      address = leaf[1];
      continue;
    }
    const local = /^\s*\/(\d+) host LOCAL\s*$/.exec(line);
    if (local && address && ipaddr.IPv4.isValidFourPartDecimal(address))
      prefixes.push([ipaddr.IPv4.parse(address), Number(local[1])]);
  }
  return prefixes;
}

/** Lines of 32 hex digits of destination, its prefix length and flags (the ninth field) with RTF_LOCAL. */
export function ipv6LocalPrefixes(routes: string): LocalPrefix[] {
  const prefixes: LocalPrefix[] = [];
  for (const line of routes.split('\n')) {
    const fields = line.trim().split(/\s+/);
    const [destination, length, , , , , , , flags] = fields;
    if (!destination || !length || !flags || !/^[0-9a-f]{32}$/.test(destination)) continue;
    if ((Number.parseInt(flags, 16) & RTF_LOCAL) === 0) continue;
    const groups = destination.match(/.{4}/g)?.join(':') ?? '';
    prefixes.push([ipaddr.IPv6.parse(groups), Number.parseInt(length, 16)]);
  }
  return prefixes;
}
