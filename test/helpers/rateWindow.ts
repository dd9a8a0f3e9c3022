import { RATE_WINDOW_MS } from '../../shared/accounts/rateLimiter';

/** Waits out the last seconds of an hour, so a burst never straddles two rate-limit windows. */
export async function awayFromWindowEdge(marginMs = 10_000): Promise<void> {
  const left = RATE_WINDOW_MS - (Date.now() % RATE_WINDOW_MS);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 100));
}
