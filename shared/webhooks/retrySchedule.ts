/**
 * Seconds to wait before the next delivery of one event, after `attempt` attempts failed (1 = the first one), or
 * undefined when there is no next one. The first retry comes within a minute, and eight attempts span about 67
 * minutes (docs/api.md, "Webhooks"). No delay exceeds 900 s, the most an SQS message can be delayed, so a queue
 * schedules every retry by itself.
 */
export function webhookRetryDelaySeconds(attempt: number): number | undefined {
  if (!Number.isInteger(attempt) || attempt < 1) return undefined;
  return RETRY_DELAYS_SECONDS[attempt - 1];
}

/** Doubling, then capped at the SQS maximum: 30 s, 2 min, 5 min, then 15 min four times. */
const RETRY_DELAYS_SECONDS: readonly number[] = [30, 120, 300, 900, 900, 900, 900];

/** Attempts of one event, the first included. */
export const WEBHOOK_MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
