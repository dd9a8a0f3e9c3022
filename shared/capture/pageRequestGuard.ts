import type { Page } from 'puppeteer-core';

/**
 * How many requests a capture's page (its frames and workers) may start within one second. Each one is several
 * DevTools events in the pipe that every capture of a browser shares, even a `data:` fetch that never leaves the
 * renderer: a page that fetched in a loop slowed another account's 0.2 s capture beside it to 7 to 32 s (red team).
 * Measured here, 1,700 a second for seconds cost a capture beside it 0.1 s; the heaviest real pages start a few
 * hundred requests, spread over seconds.
 */
export const MAX_REQUESTS_PER_SECOND = 2_000;

/** Told to the customer when the page passed the limit. */
export const TOO_MANY_REQUESTS = `The page started more than ${MAX_REQUESTS_PER_SECOND.toLocaleString('en-US')} requests within a second`;

export interface RequestGuard {
  stop(): void;
}

/** The page, as far as the guard hears it. */
export type RequestSource = Pick<Page, 'on' | 'off'>;

/**
 * Counts the requests puppeteer reports for the page and calls `exceeded` once, at the first past `perSecond`; the
 * caller ends the capture, and closing its context ends the flood. Counted in whole seconds from a request: a burst
 * across two of them may reach twice the rate, still far from what real pages do.
 */
export function guardRequestRate(page: RequestSource, perSecond: number, exceeded: () => void): RequestGuard {
  let secondStart = Number.NEGATIVE_INFINITY;
  let inSecond = 0;
  const counted = () => {
    const now = performance.now();
    if (now - secondStart >= 1_000) {
      secondStart = now;
      inSecond = 0;
    }
    inSecond += 1;
    if (inSecond > perSecond) {
      page.off('request', counted);
      exceeded();
    }
  };
  page.on('request', counted);
  return {
    stop() {
      page.off('request', counted);
    },
  };
}
