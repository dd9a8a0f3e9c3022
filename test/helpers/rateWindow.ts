import { RATE_WINDOW_MS } from '../../shared/accounts/rateLimiter';

/**
 * What a whole suite that counts requests against one window may take on a loaded machine: its requests may be
 * spread over the suite's tests (CI saw a fourth signed link answered 200 across the hour, its budget of three spent).
 */
export const SUITE_MARGIN_MS = 150_000;
/** A hook that may wait out SUITE_MARGIN_MS, with room for its own work. */
export const SUITE_WAIT_HOOK_TIMEOUT_MS = SUITE_MARGIN_MS + 150_000;

/** Waits out the last seconds of an hour, so a burst never straddles two rate-limit windows. */
export async function awayFromWindowEdge(marginMs = 10_000): Promise<void> {
  const left = RATE_WINDOW_MS - (Date.now() % RATE_WINDOW_MS);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 100));
}
