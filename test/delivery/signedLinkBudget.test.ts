import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { awayFromWindowEdge, SUITE_MARGIN_MS, SUITE_WAIT_HOOK_TIMEOUT_MS } from '../helpers/rateWindow';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/** The hourly limit of these tests: the API's, and each key's signed links'. */
const LIMIT = 3;

let pages: PageServer;
let harness: ScreenshotHarness;

beforeAll(async () => {
  await awayFromWindowEdge(SUITE_MARGIN_MS);
  pages = await startPageServer({ '/red': solidPage('#ff0000') });
  harness = await startScreenshotHarness({
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    RATE_LIMIT_PER_HOUR: String(LIMIT),
  });
}, SUITE_WAIT_HOOK_TIMEOUT_MS);

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

type Account = Awaited<ReturnType<ScreenshotHarness['newAccount']>>;
function link(account: Account, width: number) {
  const query = { url: `${pages.origin}/red`, width: String(width), keyId: account.keyId };
  return { ...query, signature: signQuery(account.signingSecret, canonicalQuery(query)) };
}

describe('signed links and the rate limit', () => {
  it('have a budget of their own per key, and using it up leaves the API keys their whole window', async () => {
    const account = await harness.newAccount();
    for (let width = 600; width < 600 + LIMIT; width++) {
      expect((await harness.open(link(account, width))).status).toBe(200);
    }
    const over = await harness.open(link(account, 700));
    expect(over.status).toBe(429);
    for (let i = 0; i < LIMIT; i++) {
      const response = await harness.shoot(account.apiKey, { url: `${pages.origin}/red`, width: 500 + i });
      expect(response.status).toBe(200);
    }
    expect((await harness.shoot(account.apiKey, { url: `${pages.origin}/red` })).status).toBe(429);
  });

  it('answered from the cache or by a 304 cost nothing: 40 replays of one public link lock nobody out', async () => {
    const account = await harness.newAccount();
    const query = link(account, 640);
    const first = await harness.open(query);
    expect(first.status).toBe(200);
    const etag = String(first.headers.ETag ?? first.headers.etag);
    for (let replay = 0; replay < 40; replay++) {
      const answer = await harness.open(query, replay % 2 === 0 ? {} : { 'if-none-match': etag });
      expect([200, 304]).toContain(answer.status);
    }
    // The link's budget still has all but the first capture's share, and the API window is whole.
    for (let width = 641; width < 640 + LIMIT; width++) {
      expect((await harness.open(link(account, width))).status).toBe(200);
    }
    expect((await harness.shoot(account.apiKey, { url: `${pages.origin}/red` })).status).toBe(200);
  });

  /**
   * Red team (round 13): the process's memo of full windows (shared/accounts/fullWindows.ts) was asked before the
   * cache, for links too: once one new link of a key found its budget spent, every cached link of the key and its
   * 304 were answered 429 for the rest of the hour. Now a link's budget is asked of it after validation and the cache.
   */
  it('answered from the cache or by a 304 still, once the key was refused for its budget', async () => {
    const account = await harness.newAccount();
    const cached = link(account, 640);
    const first = await harness.open(cached);
    expect(first.status).toBe(200);
    const etag = String(first.headers.ETag ?? first.headers.etag);
    for (let width = 641; width < 640 + LIMIT; width++) {
      expect((await harness.open(link(account, width))).status).toBe(200);
    }
    // A new link of the key finds the budget spent: the store refuses it, and the process notes the window full.
    expect((await harness.open(link(account, 700))).status).toBe(429);

    const hit = await harness.open(cached);
    const revalidated = await harness.open(cached, { 'if-none-match': etag });
    expect([hit.status, revalidated.status]).toEqual([200, 304]);
  });

  /**
   * Red team (round 13): the signature covers one value per name (the last), and a repeated name was refused
   * (400 duplicate_parameter) only with validation, after the key's budget had counted the request: whoever held a
   * leaked link, even a cached one, spent its key's hour for free by repeating one of its names in front. Now the
   * repetition is refused right after the signature (shared/screenshot/signedLinkAuth.ts).
   */
  it("spend none of it when a leaked link's holder repeats one of its names", async () => {
    const owner = await harness.newAccount();
    const leaked = Object.entries(link(owner, 640));
    expect((await harness.open(leaked)).status).toBe(200);
    const pagesAsked = pages.hits.length;

    const tampered: [string, string][] = [['width', '9999'], ...leaked];
    for (let i = 0; i < LIMIT; i++) {
      const refused = await harness.open(tampered);
      expect(refused.status).toBe(400);
      expect(refused.headers['x-ratelimit-remaining']).toBeUndefined();
    }
    expect(pages.hits.length).toBe(pagesAsked);
    // The owner's next new links still capture.
    for (let width = 641; width < 640 + LIMIT; width++) {
      expect((await harness.open(link(owner, width))).status).toBe(200);
    }
  });
});
