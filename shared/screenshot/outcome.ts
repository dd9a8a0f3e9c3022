import type { RateLimitDecision } from '../accounts/rateLimiter';
import type { Screenshot } from '../delivery/imageDelivery';
import { statusOf } from '../errors';
import type { QueuedJob } from './queuedCaptures';

/**
 * The answer to one screenshot request; `rateLimit` is there once the caller was authenticated. A success carries
 * `undelivered`, which whoever sends the image calls when it could not be handed over: the credits go back, unless the
 * image was kept in the account's cache (the same request then answers it free). It answers whether they went back.
 */
export type ScreenshotOutcome =
  | {
      ok: true;
      screenshot: Screenshot;
      rateLimit?: RateLimitDecision;
      undelivered: () => Promise<boolean>;
      /**
       * Run once the answer is settled (after `undelivered`, if that came): the capture's reserved credits are kept
       * spent, unless they went back. Absent when nothing was reserved (a cache hit).
       */
      settled?: () => Promise<void>;
    }
  /** An `async: true` capture, accepted: its credits are reserved and its job queued. */
  | { ok: true; queued: QueuedJob; rateLimit?: RateLimitDecision; undelivered: () => Promise<boolean> }
  | { ok: false; error: unknown; rateLimit?: RateLimitDecision };

/** The HTTP status an outcome is answered with. */
export function outcomeStatus(outcome: ScreenshotOutcome): number {
  if (!outcome.ok) return statusOf(outcome.error);
  if ('queued' in outcome) return 202;
  return outcome.screenshot.notModified ? 304 : 200;
}
