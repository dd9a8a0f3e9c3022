import { describe, expect, it } from 'vitest';
import { WEBHOOK_MAX_ATTEMPTS, webhookRetryDelaySeconds } from '../../shared/webhooks/retrySchedule';

/** The whole schedule: the delays after attempts 1, 2, … until it gives up. */
function schedule(): number[] {
  const delays: number[] = [];
  for (let attempt = 1; ; attempt++) {
    const delay = webhookRetryDelaySeconds(attempt);
    if (delay === undefined) return delays;
    delays.push(delay);
  }
}

describe('webhookRetryDelaySeconds', () => {
  it('retries the first failure within 60 seconds', () => {
    expect(webhookRetryDelaySeconds(1)).toBeLessThanOrEqual(60);
  });

  it('makes at least 5 attempts over at least an hour, then gives up', () => {
    const delays = schedule();
    expect(delays.length + 1).toBe(WEBHOOK_MAX_ATTEMPTS);
    expect(WEBHOOK_MAX_ATTEMPTS).toBeGreaterThanOrEqual(5);
    expect(delays.reduce((sum, delay) => sum + delay, 0)).toBeGreaterThanOrEqual(3600);
  });

  it('backs off: no delay shorter than the one before, none beyond what SQS can delay a message', () => {
    const delays = schedule();
    delays.forEach((delay, i) => {
      expect(delay).toBeLessThanOrEqual(900);
      if (i > 0) expect(delay).toBeGreaterThanOrEqual(delays[i - 1] ?? 0);
    });
    expect(delays[1]).toBeGreaterThan(delays[0] ?? 0);
  });

  it('has no delay for an attempt number that is not a positive integer', () => {
    for (const attempt of [0, -1, 1.5, Number.NaN]) expect(webhookRetryDelaySeconds(attempt)).toBeUndefined();
  });
});
