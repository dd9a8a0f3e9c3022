import type { EgressGate, EgressVerdict } from './egressGate';

/** The most names one capture's verdicts keep; a page naming more resolves the rest on every connection. */
const MAX_KEPT = 1_000;

/**
 * The gate's verdicts kept for one capture's route: a page opens up to six connections per host, and each one would
 * otherwise resolve the name again. Safe only because the route lives and dies with one capture: a cache shared
 * between captures would let a page time its connections to learn which hosts the captures before it visited.
 * Every connection still goes to exactly the addresses its verdict checked; a name that did not resolve is asked
 * again next time.
 */
export function captureVerdicts(gate: EgressGate): EgressGate {
  const kept = new Map<string, Promise<EgressVerdict>>();
  return {
    check(host, port) {
      const key = `${host} ${port}`;
      const known = kept.get(key);
      if (known) return known;
      const verdict = gate.check(host, port);
      if (kept.size < MAX_KEPT) {
        kept.set(key, verdict);
        const forget = () => kept.delete(key);
        verdict.then((found) => found.kind === 'unresolved' && forget(), forget);
      }
      return verdict;
    },
  };
}
