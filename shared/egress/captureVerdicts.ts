import { isPublicAddress } from './addressClass';
import type { EgressGate, EgressVerdict } from './egressGate';

/** The most names one capture's verdicts keep; a page naming more resolves the rest on every connection. */
const MAX_KEPT = 1_000;

/**
 * The gate's verdicts kept for one capture's route: a page opens up to six connections per host, and each one would
 * otherwise resolve the name again. Safe only because the route lives and dies with one capture: a cache shared
 * between captures would let a page time its connections to learn which hosts the captures before it visited.
 * Every connection still goes to exactly the addresses its verdict checked, of which `addressesTried` are kept (a
 * page's name server can answer thousands: red team, 85 MiB in one capture). Kept: refusals, and verdicts whose
 * addresses are all public. One that allows a private address (ALLOW_PRIVATE_HOSTS) is asked again every time,
 * since a port of the service may start listening there later, which the gate refuses (red team); a name that did not
 * resolve is asked again too.
 */
export function captureVerdicts(gate: EgressGate, addressesTried: number): EgressGate {
  const kept = new Map<string, Promise<EgressVerdict>>();
  return {
    check(host, port) {
      const key = `${host} ${port}`;
      const known = kept.get(key);
      if (known) return known;
      const verdict = gate
        .check(host, port)
        .then((found) =>
          found.kind === 'allowed'
            ? { ...found, addresses: found.addresses.slice(0, addressesTried) }
            : found,
        );
      if (kept.size < MAX_KEPT) {
        kept.set(key, verdict);
        const forget = () => kept.delete(key);
        verdict.then((found) => keepable(found) || forget(), forget);
      }
      return verdict;
    },
  };
}

function keepable(verdict: EgressVerdict): boolean {
  return (
    verdict.kind === 'refused' || (verdict.kind === 'allowed' && verdict.addresses.every(isPublicAddress))
  );
}
