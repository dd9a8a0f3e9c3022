import { describe, expect, it } from 'vitest';
import { FullWindows } from '../../shared/accounts/fullWindows';
import { RATE_WINDOW_MS } from '../../shared/accounts/rateLimiter';
import { InsufficientCreditsError, RateLimitedError } from '../../shared/errors';
import { captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { outcomeStatus as statusOf } from '../../shared/screenshot/outcome';
import {
  fakeUrlPolicy,
  MemoryImageStore,
  MemoryRateLimiter,
  memoryScreenshotDeps,
} from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * Known limit of session 19, red team round 11: a request the rate window refuses had looked its URL's host up and
 * read the cache first (both come before the admission round, so that admission stays one write). Now a window this
 * process saw full refuses at once: only the request that found it full did that work.
 */

const HOUR = Date.UTC(2026, 2, 3, 10);

function spentAccount(limit: number) {
  let at = HOUR + 60_000;
  const looked: string[] = [];
  const images = new MemoryImageStore();
  const service = memoryScreenshotService({ now: () => at, rateLimit: limit });
  const capture = captureScreenshot(
    memoryScreenshotDeps({
      keys: service.keys,
      credits: service.credits,
      renderer: service.renderer,
      rateLimiter: new MemoryRateLimiter(limit),
      images,
      urlPolicy: {
        async assertAllowed(url) {
          looked.push(new URL(url).hostname);
          await fakeUrlPolicy.assertAllowed(url);
        },
      },
      now: () => at,
    }),
  );
  return {
    looked,
    images,
    service,
    capture,
    setClock: (value: number) => {
      at = value;
    },
  };
}

const shot = (key: string, url = 'https://a.test/', cache = true) => ({
  apiKey: key,
  request: () => ({ url, cache }),
  deadline: Date.now() + 60_000,
});

describe('a window this process saw full', () => {
  it('refuses the next requests 429 without looking up their hosts or reading the cache', async () => {
    const account = spentAccount(1);
    const { key } = await account.service.addKey('acct-full', HOUR);
    await account.service.credits.set('acct-full', 100);
    expect(statusOf(await account.capture(shot(key)))).toBe(200);
    const first = await account.capture(shot(key, 'https://b.test/'));
    expect(statusOf(first)).toBe(429);
    const work = { looked: [...account.looked], reads: { ...account.images.calls } };

    const again = await Promise.all(
      ['c', 'd', 'e'].map((host) => account.capture(shot(key, `https://${host}.test/`))),
    );

    expect(again.map(statusOf)).toEqual([429, 429, 429]);
    // The same answer as the store's refusal: the limit, nothing left, the window's end.
    expect(again[0]?.rateLimit).toEqual(first.rateLimit);
    expect(first.rateLimit).toMatchObject({ allowed: false, remaining: 0, reset: HOUR + RATE_WINDOW_MS });
    expect(account.looked).toEqual(work.looked);
    expect(account.images.calls).toEqual(work.reads);
  });

  it('asks the store again in the next window, and after a clock moved back', async () => {
    const account = spentAccount(1);
    const { key } = await account.service.addKey('acct-next', HOUR);
    await account.service.credits.set('acct-next', 100);
    await account.capture(shot(key));
    expect(statusOf(await account.capture(shot(key)))).toBe(429);

    account.setClock(HOUR + RATE_WINDOW_MS + 1_000);
    expect(statusOf(await account.capture(shot(key, 'https://next.test/')))).toBe(200);
    expect(account.looked).toContain('next.test');

    account.setClock(HOUR - 1_000);
    expect(statusOf(await account.capture(shot(key, 'https://earlier.test/')))).toBe(200);
  });

  it('is one account’s: another account is asked of the store', async () => {
    const account = spentAccount(1);
    const full = await account.service.addKey('acct-a', HOUR);
    const other = await account.service.addKey('acct-b', HOUR);
    for (const accountId of ['acct-a', 'acct-b']) await account.service.credits.set(accountId, 100);
    await account.capture(shot(full.key));
    expect(statusOf(await account.capture(shot(full.key)))).toBe(429);

    expect(statusOf(await account.capture(shot(other.key, 'https://other.test/')))).toBe(200);
    expect(account.looked).toContain('other.test');
  });
});

describe('what proves a window full', () => {
  const identity = { accountId: 'acct', keyId: 'key_1', isActive: true };
  const now = HOUR + 60_000;
  const refused = {
    admitted: false as const,
    rateLimit: { allowed: false, limit: 10, remaining: 0, reset: HOUR + RATE_WINDOW_MS },
    refusal: new RateLimitedError(10, HOUR + RATE_WINDOW_MS),
  };

  it('is a refusal of one request by the rate limit, for that window alone', () => {
    const windows = new FullWindows();
    windows.note({ identity, budget: 'api', now, slot: 'none' }, refused);
    expect(windows.refusal(identity, 'api', now + 1_000)).toEqual(refused.rateLimit);
    // The key's signed links count against a budget of their own.
    expect(windows.refusal(identity, 'signedLink', now)).toBeUndefined();
  });

  it('is not a batch refused for lacking room, nor a refusal by the slots or the credits', () => {
    const windows = new FullWindows();
    windows.note({ identity, budget: 'api', now, slot: 'none', requests: 5 }, refused);
    windows.note(
      { identity, budget: 'api', now, slot: { until: now + 60_000 }, cost: 1 },
      {
        admitted: false,
        rateLimit: { allowed: true, limit: 10, remaining: 3, reset: HOUR + RATE_WINDOW_MS },
        refusal: new InsufficientCreditsError(1, 0),
      },
    );
    expect(windows.refusal(identity, 'api', now)).toBeUndefined();
  });
});
