/** The outcome of counting one request against its account's window. */
export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** When the current window ends, ms since epoch. */
  reset: number;
}

/**
 * Port for an hourly rate limit (docs/api.md: fixed one-hour UTC windows, exact under concurrency): an account's
 * API window (the subject is the account id), or a key's signed-link budget (the subject is the key id).
 */
export interface RateLimiter {
  /** Counts `count` requests (a batch's captures) at once: all of them, or none when the window lacks room. */
  hit(subject: string, now: number, count?: number): Promise<RateLimitDecision>;
}

export const RATE_WINDOW_MS = 60 * 60 * 1000;

export function windowStart(now: number): number {
  return now - (now % RATE_WINDOW_MS);
}
