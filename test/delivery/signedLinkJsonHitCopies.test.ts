import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keyManagement } from '../../shared/keys/keyManagement';
import { captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import {
  FakeRenderer,
  fakeSessions,
  MemoryCreditLedger,
  MemoryImageStore,
  MemoryKeyStore,
  MemoryRateLimiter,
  memoryScreenshotDeps,
} from '../helpers/memoryPorts';
import { signedLinkInput, signedQuery } from '../helpers/memoryScreenshot';

/**
 * Red team (round 11c): a signed link that asks for `response=json` and is answered from the cache. docs/api.md 15.3
 * says a link answered from the cache costs no budget; 15.2 says a cache hit's link names "an object of its own": a
 * hit copies the entry inside S3. Together: every replay of one public link stores another full copy of the image
 * (kept two days by the `linked/` lifecycle rule), free, counted in no window (neither the link's budget nor the
 * API's), its answer `Cache-Control: no-store` so the signed-link CDN never absorbs it. Whoever holds such a link, or
 * the owner with its own, makes the operator store without bound what nobody paid for, past every limit the
 * account has. The POST route's JSON hit does the same but counts in the account's hourly window.
 *
 * What should hold: the objects stored for one link are bounded by what the account is allowed (its link budget),
 * however often it is replayed; either the JSON hits count in the budget (429 past it) or they share one copy.
 *
 * Fixed: shared/delivery/imageDelivery.ts names a hit's copy after the entry and its etag, written again by each hit.
 */

const LIMIT = 3;
const REPLAYS = 40;

describe('a signed link with response=json answered from the cache', () => {
  it('does not store a new copy of the image for every replay, free and past every budget', async () => {
    const now = Date.UTC(2026, 0, 1, 10, 0);
    const keys = new MemoryKeyStore();
    const credits = new MemoryCreditLedger();
    const images = new MemoryImageStore();
    const cipher = new AesGcmSecretCipher(randomBytes(32));
    const capture = captureScreenshot(
      memoryScreenshotDeps({
        keys,
        credits,
        images,
        cipher,
        renderer: new FakeRenderer(),
        rateLimiter: new MemoryRateLimiter(LIMIT),
        signedLinkBudget: new MemoryRateLimiter(LIMIT),
        now: () => now,
      }),
    );
    const manage = keyManagement({ sessions: fakeSessions, keys, credits, cipher, freeCredits: 0 });
    const key = await manage.createKey('session:alice', () => ({ name: 'site' }));
    await credits.set('alice', 10);

    const query = signedQuery(key, { url: 'https://a.test/page', response: 'json' });
    const open = () => capture(signedLinkInput(query, now + 60_000));

    const first = await open();
    expect(first.ok && 'screenshot' in first && first.screenshot.cache).toBe('MISS');
    const balance = await credits.balance('alice');
    const storedAfterFirst = images.objects.size;

    let answeredWithLink = 0;
    for (let replay = 0; replay < REPLAYS; replay++) {
      const outcome = await open();
      if (outcome.ok && 'screenshot' in outcome && outcome.screenshot.link) answeredWithLink++;
    }
    const copies = images.objects.size - storedAfterFirst;
    // Nothing was charged for any of it.
    expect(await credits.balance('alice')).toBe(balance);
    // Before the fix: 40 replays, 40 links, 40 new objects (each a full copy of the image), with a budget of 3.
    expect(answeredWithLink + copies).toBeGreaterThan(0);
    expect(copies).toBeLessThanOrEqual(LIMIT);
  });
});
