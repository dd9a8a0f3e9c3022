import { canonicalAddress } from './addressClass';

/**
 * ALLOW_PRIVATE_HOSTS (docs/api.md, "Local service"): '' refuses every private address, '*' allows them all, and
 * 'host:port,host:port' allows exactly those destinations. An entry matches the host as the URL names it or the
 * address it resolved to, on the same effective port. No deployment sets it.
 */
export interface AllowList {
  /** '*' was given: every private destination is allowed. */
  readonly any: boolean;
  /** Whether `host` (as named in the URL) or `address` (as resolved) on `port` is an explicitly allowed destination. */
  allows(host: string, address: string | undefined, port: number): boolean;
}

export function parseAllowList(raw: string): AllowList {
  const entries = new Set<string>();
  let any = false;
  for (const part of raw.split(',')) {
    const entry = part.trim();
    if (entry === '') continue;
    if (entry === '*') {
      any = true;
      continue;
    }
    entries.add(parseEntry(entry));
  }
  return {
    any,
    allows(host, address, port) {
      if (any) return true;
      if (entries.has(key(normalizeHost(host), port))) return true;
      return address !== undefined && entries.has(key(normalizeHost(address), port));
    },
  };
}

/**
 * Lowercases, drops IPv6 brackets and a trailing root dot, and writes IP literals canonically (IPv4-mapped IPv6
 * folded to IPv4), so the URL's host, a resolved address and an allow-list entry compare as equal strings.
 */
export function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return canonicalAddress(h) ?? h;
}

/** Port as the URL implies it: explicit, or the scheme's default. */
export function effectivePort(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' || url.protocol === 'wss:' ? 443 : 80;
}

function parseEntry(entry: string): string {
  // The URL parser normalises the host exactly as it will normalise the request's URL (numeric forms, case).
  let url: URL;
  try {
    url = new URL(`http://${entry}`);
  } catch {
    throw new Error(`ALLOW_PRIVATE_HOSTS entry "${entry}" is not host:port`);
  }
  const hasPort = entry.lastIndexOf(':') > entry.lastIndexOf(']');
  if (
    !hasPort ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== '' ||
    url.username !== '' ||
    url.password !== ''
  ) {
    throw new Error(`ALLOW_PRIVATE_HOSTS entry "${entry}" is not host:port`);
  }
  return key(normalizeHost(url.hostname), effectivePort(url));
}

function key(host: string, port: number): string {
  return `${host}|${port}`;
}
