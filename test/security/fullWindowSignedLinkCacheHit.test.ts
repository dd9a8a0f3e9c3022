import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { awayFromWindowEdge } from '../helpers/rateWindow';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 13b): the per-process memo of full rate windows (shared/accounts/fullWindows.ts, just added) is
 * consulted at the very start of `admitted()` in shared/screenshot/captureScreenshot.ts, before the cache. For the API
 * window that keeps the order of checks (a POST cache hit counts against the window, so 429 comes first). For a signed
 * link it does not: docs/api.md 15.3 puts "validation and the cache" before "the link's own rate limit", and says "A
 * link answered from the cache, or by a 304, costs no budget" (the route itself returns a signed-link hit before the
 * admission round). Once one uncached link of a key was refused by the store, this process refuses every later link of
 * that key with 429 until the hour ends: the images already in the cache, and the 304 revalidations of browsers that
 * hold them, included. A popular `<img>` whose image is cached (the case the budget rule exists to keep working) goes
 * broken for up to an hour on that instance because someone loaded one new link, e.g. a leaked one.
 *
 * Real parts: the deployed screenshot handler (startScreenshotHarness: dynalite, the local S3 API, real Chromium).
 *
 * Fixed: shared/screenshot/captureScreenshot.ts asks FullWindows for a signed link's budget only after validation
 * and the cache, just before the admission round (the API window's is still asked first of all).
 */

const LIMIT = 1;

let pages: PageServer;
let harness: ScreenshotHarness;

beforeAll(async () => {
  await awayFromWindowEdge(45_000);
  pages = await startPageServer({ '/red': solidPage('#ff0000') });
  harness = await startScreenshotHarness({
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    RATE_LIMIT_PER_HOUR: String(LIMIT),
  });
}, 120_000);

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

type Account = Awaited<ReturnType<ScreenshotHarness['newAccount']>>;
function link(account: Account, width: number) {
  const query = { url: `${pages.origin}/red`, width: String(width), keyId: account.keyId };
  return { ...query, signature: signQuery(account.signingSecret, canonicalQuery(query)) };
}

describe('a signed link answered from the cache after its key’s budget was seen full', () => {
  it('is still answered from the cache (200) and by a 304, as it costs no budget', async () => {
    const account = await harness.newAccount();
    const cachedLink = link(account, 640);
    const first = await harness.open(cachedLink);
    expect(first.status).toBe(200);
    const etag = String(first.headers.ETag ?? first.headers.etag);

    // Before anyone loads a new link, the cached one is served from the cache, free.
    expect((await harness.open(cachedLink)).status).toBe(200);

    // One uncached link of the same key finds the budget spent: the store refuses it (that is right).
    expect((await harness.open(link(account, 700))).status).toBe(429);

    // The cached image and its revalidation cost no budget (docs/api.md 15.3) and must still be served.
    const hit = await harness.open(cachedLink);
    const revalidated = await harness.open(cachedLink, { 'if-none-match': etag });
    // Before the fix: 429 and 429, from the process's memo of the full window, before the cache was looked at.
    expect([hit.status, revalidated.status]).toEqual([200, 304]);
  });
});
