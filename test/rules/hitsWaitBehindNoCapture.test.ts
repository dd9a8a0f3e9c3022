import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import { outcomeStatus } from '../../shared/screenshot/outcome';
import { deferred } from '../helpers/deferred';
import { FakeRenderer } from '../helpers/memoryPorts';
import { memoryScreenshotService, signedLinkInput, signedQuery } from '../helpers/memoryScreenshot';

/**
 * Red team (round 30, capacity): locally, every authenticated screenshot request waited for a capture place before
 * it was even validated. A free account kept every shared place with captures sure to fail (free to it), and another
 * account, with one capture of its own running (so not on the headroom), waited 10 s for a cache hit and for a `400`
 * (16 and 40 ms otherwise; deployed, neither ever waits for a renderer). Requests are now validated and looked up in a
 * queue of their own, and only a capture waits for a capture place.
 */

// As npm start, scaled down: LOCAL_MAX_CAPTURES, CAPTURE_HEADROOM, LOCAL_MAX_QUEUED; one queue each, as there.
const queue = () => new AdmissionQueue({ shared: 2, headroom: 1 }, 4);
const IN_TIME_MS = 2_000;

describe('with every capture place taken by another account, and a capture of its own running', () => {
  it("an account's cache hit and its 400 are answered without waiting for a place", async () => {
    const renderer = new FakeRenderer();
    const now = Date.now();
    const { capture, credits, addKey } = memoryScreenshotService({
      now: () => now,
      renderer,
      admission: queue(),
      lookups: queue(),
    });
    const hostile = await addKey('hostile', now, 'hostile');
    await credits.set('hostile', 10);
    const bob = await addKey('bob', now, 'bob');
    await credits.set('bob', 10);
    const shoot = (key: string, request: Record<string, unknown>) =>
      capture({ apiKey: key, request: () => request, deadline: now + 60_000 });
    const inTime = <T>(answer: Promise<T>) =>
      Promise.race([
        answer,
        new Promise<'still waiting'>((resolve) => setTimeout(resolve, IN_TIME_MS, 'still waiting')),
      ]);

    const cached = { url: 'https://bob.test/page', cache: true };
    expect(outcomeStatus(await shoot(bob.key, cached))).toBe(200);
    // Every shared place, and one more waiting: captures that hold their place.
    const held = [1, 2, 3].map((n) => shoot(hostile.key, { url: `https://hostile.test/slow-${n}` }));
    await expect.poll(() => renderer.captures.length).toBe(1 + 2);
    // Bob's own capture, on the headroom.
    const own = shoot(bob.key, { url: 'https://bob.test/slow-own' });
    await expect.poll(() => renderer.captures.length).toBe(1 + 3);

    const hit = await inTime(shoot(bob.key, cached));
    const invalid = await inTime(shoot(bob.key, { url: 'https://bob.test/page', width: 1 }));
    expect(hit === 'still waiting' ? hit : outcomeStatus(hit)).toBe(200);
    expect(hit !== 'still waiting' && hit.ok && 'screenshot' in hit && hit.screenshot.cache).toBe('HIT');
    expect(invalid === 'still waiting' ? invalid : outcomeStatus(invalid)).toBe(400);

    renderer.finishSlow();
    await expect.poll(() => renderer.captures.length).toBe(1 + 4);
    renderer.finishSlow();
    expect((await Promise.all([...held, own])).map(outcomeStatus)).toEqual([200, 200, 200, 200]);
  });
});

describe('a signed link whose budget this process knows spent, with every capture place taken', () => {
  // Review (session 31): it was validated, looked up, and then waited for a capture place only to be refused 429.
  it('is refused 429 at once', async () => {
    const renderer = new FakeRenderer();
    const now = Date.now();
    const admission = queue();
    const { capture, credits, addKey } = memoryScreenshotService({
      now: () => now,
      renderer,
      rateLimit: 1,
      admission,
      lookups: queue(),
    });
    const key = await addKey('owner', now, 'site');
    await credits.set('owner', 10);
    const visit = (page: string) =>
      capture(signedLinkInput(signedQuery(key, { url: `https://owner.test/${page}` }), now + 60_000));
    expect(outcomeStatus(await visit('one'))).toBe(200);
    // Refused once by the store: the process knows the budget spent from here.
    expect(outcomeStatus(await visit('two'))).toBe(429);
    // Both shared places and the headroom, held by other accounts.
    const busy = deferred();
    const held = ['other', 'other', 'third'].map((account) => admission.run(account, () => busy.promise));
    const answer = await Promise.race([
      visit('three'),
      new Promise<'still waiting'>((resolve) => setTimeout(resolve, IN_TIME_MS, 'still waiting')),
    ]);
    expect(answer === 'still waiting' ? answer : outcomeStatus(answer)).toBe(429);
    busy.resolve();
    await Promise.all(held);
    expect(renderer.captures).toHaveLength(1);
  });
});
