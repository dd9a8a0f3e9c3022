import type { LookupAddress } from 'node:dns';
import { Resolver } from 'node:dns/promises';

/** One try's wait for a name server, and the tries: a silent server is given up within seconds. */
const QUERY_TIMEOUT_MS = 2_000;
const QUERY_TRIES = 2;

/**
 * A host's addresses from the name servers of /etc/resolv.conf, asked over the network by c-ares (IPv4 first, then
 * IPv6; CNAMEs followed), never through getaddrinfo. getaddrinfo runs on libuv's thread pool, which gives DNS two
 * threads per process and cannot cancel them: a page naming a few dozen hosts whose name server never answers held
 * both for minutes, and every other lookup of the process (another account's capture, the AWS SDK's endpoints) waited
 * behind them (red team). c-ares queries are sockets on the event loop: a silent server costs nothing but its own wait.
 * Unlike getaddrinfo, it does not read /etc/hosts: names a developer allows by ALLOW_PRIVATE_HOSTS still go through
 * the system (egressGate.ts).
 */
export async function networkLookup(hostname: string): Promise<LookupAddress[]> {
  const resolver = new Resolver({ timeout: QUERY_TIMEOUT_MS, tries: QUERY_TRIES });
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
  const addresses = [
    ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
    ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
  ];
  if (addresses.length > 0) return addresses;
  // Neither family: the more telling failure (a name that does not exist, a server that did not answer) over ENODATA.
  const failures = [v4, v6].flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
  throw (
    failures.find((error) => (error as { code?: string }).code !== 'ENODATA') ??
    failures[0] ??
    noAddress(hostname)
  );
}

function noAddress(hostname: string): Error {
  return Object.assign(new Error(`no address for ${hostname}`), { code: 'ENODATA' });
}
