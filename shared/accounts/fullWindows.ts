import type { KeyIdentity } from '../keys/keyStore';
import type { AdmissionAsk, AdmissionVerdict } from './admissionRound';
import { RATE_WINDOW_MS, type RateLimitDecision, windowStart } from './rateLimiter';

/**
 * The rate windows this process saw full. A request counted against one of them is refused before any other work
 * (its URL's lookup, a read of the cache), with the answer the admission round would give: a window's count only
 * rises (the admission round alone writes it, and gives nothing back), so a full window stays full until it ends.
 * Only a one-request refusal proves a window full: a batch is refused by a window with room for fewer than it asks.
 * Each process learns it from the store once per window; a clock moved back (tests) finds no match and asks again.
 */
export class FullWindows {
  /** The refusal, by window subject; only windows refused since their start, so at most one per subject. */
  private readonly full = new Map<string, RateLimitDecision>();

  /** The rate limit's refusal of a request counted against a window known full now, if any. */
  refusal(identity: KeyIdentity, budget: AdmissionAsk['budget'], now: number): RateLimitDecision | undefined {
    const known = this.full.get(subjectOf(identity, budget));
    return known?.reset === windowStart(now) + RATE_WINDOW_MS ? known : undefined;
  }

  /** Learns from a verdict of the admission round. */
  note(ask: AdmissionAsk, verdict: AdmissionVerdict): void {
    if (verdict.admitted || verdict.rateLimit.allowed || (ask.requests ?? 1) !== 1) return;
    // Windows that ended go as a new one is learnt, so the map holds only the accounts refused this window.
    for (const [subject, known] of this.full) if (known.reset <= ask.now) this.full.delete(subject);
    this.full.set(subjectOf(ask.identity, ask.budget), verdict.rateLimit);
  }
}

/** An account's API window, or one key's signed-link budget. */
function subjectOf(identity: KeyIdentity, budget: AdmissionAsk['budget']): string {
  return budget === 'signedLink' ? `link:${identity.keyId}` : `api:${identity.accountId}`;
}
