import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { awayFromWindowEdge, SUITE_MARGIN_MS, SUITE_WAIT_HOOK_TIMEOUT_MS } from '../helpers/rateWindow';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team, round 13: whoever holds one leaked signed link, even one answered from the cache, spends its key's
 * signed-link budget for free by repeating a parameter.
 *
 * What it shows: the signature covers the query as the handler reads it, one value per name (the last one), and the
 * check for a repeated name runs later, with validation, after the link's budget has counted the request. So the
 * leaked link with any of its own parameters repeated in front (`url=x&<the link>`) still authenticates, is counted
 * against the key's budget, and is answered `400 duplicate_parameter`: no capture, no credit, no cache read. A few
 * such requests use the key's whole hour (here 3), and the owner's next link of that key that is not in the cache
 * (a new `<img>`, or an entry that expired) is refused `429`.
 *
 * Why it matters: a cached link is otherwise free to replay and costs no budget ("the floods a popular or leaked link
 * brings" are meant to cost the owner nothing); a link with repeated names is not one the owner ever signed (the
 * documented canonical query names each parameter once), yet it spends the owner's budget at no cost to its sender.
 * With finding signedLinkCachedAfterBudgetSpent, the same trick also breaks the key's cached links.
 *
 * Fixed: a signed link that repeats a name is refused `400 duplicate_parameter` right after its signature is checked,
 * before its budget is counted (shared/screenshot/signedLinkAuth.ts).
 */

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
function link(account: Account, width: number): [string, string][] {
  const query = { url: `${pages.origin}/red`, width: String(width), keyId: account.keyId };
  return [...Object.entries(query), ['signature', signQuery(account.signingSecret, canonicalQuery(query))]];
}

describe('a leaked signed link with a parameter repeated', () => {
  it("spends none of its key's budget: the owner's next link still captures", async () => {
    const owner = await harness.newAccount();
    const leaked = link(owner, 640);
    expect((await harness.open(leaked)).status).toBe(200);
    const pagesAsked = pages.hits.length;

    // What the holder of the leaked link sends: the same link, a name repeated in front (the last value is the signed one).
    const tampered: [string, string][] = [['width', '9999'], ...leaked];
    // The link's own capture took one of the key's LIMIT; these take the rest.
    for (let i = 1; i < LIMIT; i++) {
      // 400 duplicate_parameter, without rate-limit headers: nothing was counted.
      const refused = await harness.open(tampered);
      expect(refused.status).toBe(400);
      expect(refused.headers['x-ratelimit-remaining']).toBeUndefined();
    }
    // Nothing was captured for them, and nothing charged.
    expect(pages.hits.length).toBe(pagesAsked);

    // The owner's new <img> of the same key (not in the cache yet).
    const fresh = await harness.open(link(owner, 800));
    expect(fresh.status).toBe(200);
  });
});
