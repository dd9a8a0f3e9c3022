import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import { OverloadedError } from '../../shared/errors';
import { outcomeStatus } from '../../shared/screenshot/outcome';
import { deferred } from '../helpers/deferred';
import { MemoryImageStore } from '../helpers/memoryPorts';
import { memoryScreenshotService, signedLinkInput, signedQuery } from '../helpers/memoryScreenshot';

/**
 * Red team (round 17): docs/api.md 6.4 and 15.3, a popular or leaked link "cannot lock its owner's API keys out".
 * Deployed, signed links keep one slot free (linkSlotLimit). Locally the capture queue (local/admissionQueue.ts)
 * decides whether a request runs at all, and it knew no link pool: visitors of a leaked link, answered free from the
 * cache (each holding its place while its entry is read, up to 190 MiB), kept the account's running and waiting places
 * full, and the owner's own request was refused `503` at once (a request cannot take a waiting place from its own
 * account). Fixed: an account's link requests run in all but one of the shared places, and a request with an API key
 * takes the waiting place of its own account's latest link request when no other is free, and starts before the link
 * requests waiting with it.
 */

/** An image store whose reads wait until the test lets them go: a large entry being read. */
class SlowReads extends MemoryImageStore {
  held = false;
  private waiting: (() => void)[] = [];
  override async get(key: string, maxBytes?: number) {
    if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve));
    return super.get(key, maxBytes);
  }
  release(): void {
    this.held = false;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
  get reading(): number {
    return this.waiting.length;
  }
}

// As npm start, scaled down: LOCAL_MAX_CAPTURES, CAPTURE_HEADROOM, LOCAL_MAX_QUEUED.
const SHARED = 2;
const HEADROOM = 2;
const MAX_WAITING = 4;

describe('visitors of a leaked signed link, answered from the cache, on the local queue', () => {
  it("leave the owner's own API key a place (they may not lock it out, as deployed slots do not)", async () => {
    const now = Date.UTC(2026, 0, 1, 10, 0);
    const images = new SlowReads();
    const { capture, credits, addKey } = memoryScreenshotService({
      now: () => now,
      images,
      admission: new AdmissionQueue({ shared: SHARED, headroom: HEADROOM }, MAX_WAITING),
      // Hits are read in the lookups' turn (red team, round 30), a queue of its own as npm start has.
      lookups: new AdmissionQueue({ shared: SHARED, headroom: HEADROOM }, MAX_WAITING),
    });
    const key = await addKey('owner', now, 'site');
    await credits.set('owner', 10);
    const otherKey = await addKey('other', now, 'other');
    await credits.set('other', 10);

    const query = signedQuery(key, { url: 'https://owner.test/card' });
    const visit = () => capture(signedLinkInput(query, now + 60_000));

    // The link's first visitor: captured, charged once, in the cache.
    const first = await visit();
    expect(first.ok && 'screenshot' in first && first.screenshot.cache).toBe('MISS');
    expect(await credits.balance('owner')).toBe(9);

    // Visitors keep coming; each is a free hit (no budget), and holds a place while its entry is read: all but one of
    // the shared places (before: every one), and every waiting place.
    images.held = true;
    const visitors = Array.from({ length: SHARED - 1 + MAX_WAITING }, () => visit());
    await expect.poll(() => images.reading).toBe(SHARED - 1);

    // The owner's own capture, with its API key.
    const own = await Promise.race([
      capture({
        apiKey: key.key,
        request: () => ({ url: 'https://owner.test/report' }),
        deadline: now + 60_000,
      }),
      new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 2_000)),
    ]);

    // Another account meanwhile is served at once (the headroom is for accounts with nothing running).
    const other = await capture({
      apiKey: otherKey.key,
      request: () => ({ url: 'https://other.test/page' }),
      deadline: now + 60_000,
    });
    expect(outcomeStatus(other)).toBe(200);

    images.release();
    const answered = await Promise.all(visitors);
    expect(answered.map((outcome) => outcomeStatus(outcome))).toEqual(
      Array(SHARED - 1 + MAX_WAITING).fill(200),
    );
    // The visitors cost the account nothing.
    expect(await credits.balance('owner')).toBe(own === 'still waiting' || !own.ok ? 9 : 8);

    expect(
      own === 'still waiting' ? own : !own.ok && own.error instanceof OverloadedError ? '503' : 'served',
    ).toBe('served');
  });
});

describe('a request with an API key, when every waiting place is taken', () => {
  it("takes the place of its own account's latest link request, which waits aside, and starts first", async () => {
    // One place, no headroom, two waiting places.
    const queue = new AdmissionQueue({ shared: 1, headroom: 0 }, 2);
    const running = deferred();
    const busy = queue.run('acct-x', () => running.promise);
    const order: string[] = [];
    const link = (name: string) =>
      queue
        .run('owner', async () => order.push(name), undefined, 'signedLink')
        .catch((error: unknown) => error);
    const links = [link('link 1'), link('link 2')];
    // A third link request finds every place taken, and takes none from its own account.
    expect(await link('link 3')).toBeInstanceOf(OverloadedError);

    const own = queue.run('owner', async () => order.push('api'));
    running.resolve();
    await Promise.all([busy, own, ...links]);
    // The owner's own request first; the link request set aside took the first place that freed.
    expect(order).toEqual(['api', 'link 1', 'link 2']);
  });
});
