import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import { outcomeStatus } from '../../shared/screenshot/outcome';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * Red team (round 17): a request is authenticated on arrival, then may wait in the local capture queue
 * (local/admissionQueue.ts) for a place, up to `LOCAL_MAX_QUEUED` of them. An owner who revoked a leaked key was told
 * "the key fails with 401 from the next request" (docs/api.md 9.3), yet every request the key had waiting was then
 * admitted, captured and charged. Fixed: a request that waited has its key read again as its turn comes
 * (captureScreenshot.ts). Deployed nothing waits, so nothing is read twice.
 */

describe('requests of a key waiting in the local capture queue while the owner revokes it', () => {
  it('are refused 401 when their turn comes, not captured and charged to the owner', async () => {
    const now = Date.UTC(2026, 0, 1, 10, 0);
    const {
      capture,
      credits,
      renderer,
      keyManagement: manage,
      addKey,
    } = memoryScreenshotService({
      now: () => now,
      // As npm start, scaled down: one place, and room to wait.
      admission: new AdmissionQueue({ shared: 1, headroom: 0 }, 8),
    });
    const leaked = await addKey('owner', now, 'ci');
    await credits.set('owner', 10);

    const shoot = (url: string) =>
      capture({ apiKey: leaked.key, request: () => ({ url }), deadline: now + 60_000 });

    // Whoever holds the leaked key: one capture that takes a while holds the place, three more wait for it.
    const running = shoot('https://a.test/slow');
    await expect.poll(() => renderer.captures.length).toBe(1);
    const waiting = [shoot('https://a.test/1'), shoot('https://a.test/2'), shoot('https://a.test/3')];
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(renderer.captures.length).toBe(1);
    const balanceAtRevocation = await credits.balance('owner');
    expect(balanceAtRevocation).toBe(9);

    // The owner revokes the key and is told it fails from the next request.
    expect(await manage.updateKey('session:owner', leaked.id, () => ({ isActive: false }))).toEqual({
      success: true,
      message: 'API key revoked',
    });
    expect(outcomeStatus(await shoot('https://a.test/after'))).toBe(401);

    renderer.finishSlow();
    expect(outcomeStatus(await running)).toBe(200);
    const statuses = (await Promise.all(waiting)).map((outcome) => outcomeStatus(outcome));

    // Captured and charged after the revocation answer: [200, 200, 200], 3 credits.
    expect({ statuses, charged: balanceAtRevocation - (await credits.balance('owner')) }).toEqual({
      statuses: [401, 401, 401],
      charged: 0,
    });
  });
});
