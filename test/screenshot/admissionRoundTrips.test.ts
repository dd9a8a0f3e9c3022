import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CountingRelay, startCountedHarness } from '../helpers/countingRelay';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import type { ScreenshotHarness } from '../helpers/screenshotHarness';

let pages: PageServer;
let counted: Awaited<ReturnType<typeof startCountedHarness>>;
let harness: ScreenshotHarness;
let relay: CountingRelay;
let apiKey: string;

beforeAll(async () => {
  pages = await startPageServer({ '/red': solidPage('#ff0000') });
  counted = await startCountedHarness({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
  ({ harness, relay } = counted);
  ({ apiKey } = await harness.newAccount());
});

afterAll(async () => {
  await counted?.close();
  await pages?.close();
});

describe('admission before the renderer is asked', () => {
  it('waits for at most two sequential DynamoDB round trips: the key, then the admission write', async () => {
    const seen: { calls: number; rounds: number }[] = [];
    const spy = vi.spyOn(harness.renderer, 'capture');
    spy.mockImplementation(async (...args) => {
      seen.push({ calls: relay.calls, rounds: relay.rounds });
      spy.mockRestore();
      return harness.renderer.capture(...args);
    });
    relay.reset();
    const response = await harness.shoot(apiKey, { url: `${pages.origin}/red`, width: 320, height: 320 });
    expect(response.status).toBe(200);
    expect(seen).toHaveLength(1);
    const [before] = seen;
    // The key lookup, then one write of the account item: the rate limit, lastUsed, the slot and the credits.
    expect(before?.calls).toBe(2);
    expect(before?.rounds).toBeLessThanOrEqual(2);
  });
});
