import { promises as dns, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { classifyAddress, embeddedAddress } from './addressClass';
import { type AllowList, normalizeHost, parseAllowList } from './allowList';
import { networkLookup } from './networkLookup';
import { ownPorts } from './ownPorts';
import { isThisMachine } from './thisMachine';

/** Resolves a host name to every address it has. Injectable so tests can script DNS (rebinding, failures). */
export type HostLookup = (hostname: string) => Promise<readonly LookupAddress[]>;

/** getaddrinfo: /etc/hosts, then DNS; on libuv's thread pool (see networkLookup.ts). */
const systemLookup: HostLookup = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

export interface EgressGateOptions {
  /** Raw ALLOW_PRIVATE_HOSTS. */
  allowPrivateHosts: string;
  /** Every lookup; by default the network's name servers, and the system's for names ALLOW_PRIVATE_HOSTS allows. */
  lookup?: HostLookup;
  /** The most a lookup is waited for. */
  lookupTimeoutMs?: number;
  /** Whether an address is this machine's own; by default the kernel says (thisMachine.ts). */
  thisMachine?: (address: string) => Promise<boolean>;
}

export type EgressVerdict =
  /** Every address is allowed; connect only to these (pinned), never re-resolve. */
  | { kind: 'allowed'; addresses: string[] }
  /** `allowable`: ALLOW_PRIVATE_HOSTS could let it through (a private address), unlike the service's own ports. */
  | { kind: 'refused'; reason: string; allowable: boolean }
  /** DNS failed or returned nothing: not a policy matter, the connection simply cannot be made. */
  | { kind: 'unresolved'; reason: string };

export interface EgressGate {
  check(host: string, port: number): Promise<EgressVerdict>;
}

/**
 * The one decision shared by the URL policy (before capture) and the egress proxy (during capture): resolve the
 * host once, and allow it only if every address is public or explicitly allowed, and no private one is on a port of
 * the service itself (ownPorts).
 */
export function createEgressGate(options: EgressGateOptions): EgressGate {
  const allowList: AllowList = parseAllowList(options.allowPrivateHosts);
  // A name the developer allowed may be one of /etc/hosts (their machine's own names), which only the system reads.
  const lookupOf = (host: string, port: number): HostLookup =>
    options.lookup ?? (allowList.allows(host, undefined, port) ? systemLookup : networkLookup);
  const lookupTimeoutMs = options.lookupTimeoutMs ?? 5_000;
  const thisMachine = options.thisMachine ?? isThisMachine;

  return {
    async check(rawHost, port) {
      const host = normalizeHost(rawHost);
      if (host === '') return { kind: 'refused', reason: 'url has no host', allowable: false };
      // Chromium answers these itself as loopback (RFC 6761), whatever DNS says.
      if ((host === 'localhost' || host.endsWith('.localhost')) && !allowList.allows(host, undefined, port)) {
        return { kind: 'refused', reason: `url host ${host} is a loopback name`, allowable: true };
      }

      let addresses: string[];
      if (isIP(host) !== 0) {
        addresses = [host];
      } else {
        try {
          const found = await withTimeout(lookupOf(host, port)(host), lookupTimeoutMs);
          addresses = found.map((entry) => entry.address);
        } catch (error) {
          return { kind: 'unresolved', reason: `could not resolve ${host} (${errorCode(error)})` };
        }
        if (addresses.length === 0) return { kind: 'unresolved', reason: `could not resolve ${host}` };
      }

      for (const address of addresses) {
        const classified = classifyAddress(address);
        // A public address of this very machine is still this machine: a developer's other services listen there. So
        // is one a NAT64 or 6to4 relay would deliver to it.
        const embedded = embeddedAddress(address);
        const ours = async () =>
          (await thisMachine(address)) || (embedded !== undefined && (await thisMachine(embedded)));
        const range = classified === 'public' && (await ours()) ? 'this machine' : classified;
        // The service's own ports on this machine are never a page's to reach, whatever the allow list says.
        if (range !== 'public' && ownPorts.has(port)) {
          return {
            kind: 'refused',
            reason: `url names a port of the service itself (${address}:${port})`,
            allowable: false,
          };
        }
        if (range !== 'public' && !allowList.allows(host, address, port)) {
          return {
            kind: 'refused',
            reason: `url resolves to a private or reserved address (${address}, ${range})`,
            allowable: true,
          };
        }
      }
      return { kind: 'allowed', addresses };
    },
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error('DNS lookup timed out'), { code: 'ETIMEOUT' })),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function errorCode(error: unknown): string {
  if (error && typeof error === 'object' && 'code' in error && typeof error.code === 'string')
    return error.code;
  return error instanceof Error ? error.message : 'lookup failed';
}
