import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import type { UrlPolicy } from '../../shared/egress/urlPolicy';
import { captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { outcomeStatus } from '../../shared/screenshot/outcome';
import { DeferredUsageRecorder } from '../../shared/usage/usageRecorder';
import { MemoryRateLimiter, MemoryUsageStore, memoryScreenshotDeps } from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * Review (session 31) of the lookups' queue: a client that hung up while its request was validated (a slow DNS
 * answer) was refused before the window counted it, yet left a usage record; repeated, it held the lookups' places
 * for nothing, without its rate limit bounding it. And a key revoked while its request waited for a lookups' turn was
 * still validated, looked up, and queued for a capture place before its 401.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const queue = () => new AdmissionQueue({ shared: 1, headroom: 0 }, 8);

describe('a client that hangs up while its request is validated', () => {
  it('is counted in its window, and recorded, as a hang-up during its capture is', async () => {
    const now = Date.UTC(2026, 0, 1, 10, 30);
    const base = memoryScreenshotService({ now: () => now });
    const usageStore = new MemoryUsageStore();
    const usage = new DeferredUsageRecorder(usageStore);
    const slowDns: UrlPolicy = {
      async assertAllowed(url) {
        if (url.includes('slow-dns')) await sleep(300);
      },
    };
    const capture = captureScreenshot(
      memoryScreenshotDeps({
        keys: base.keys,
        credits: base.credits,
        rateLimiter: new MemoryRateLimiter(2),
        urlPolicy: slowDns,
        usage,
        now: () => now,
        admission: queue(),
        lookups: queue(),
      }),
    );
    const { key } = await base.addKey('acct', now);
    await base.credits.set('acct', 10);
    const hangUps: number[] = [];
    for (const n of [1, 2]) {
      const client = new AbortController();
      const sent = capture({
        apiKey: key,
        request: () => ({ url: `https://slow-dns.test/${n}` }),
        deadline: now + 60_000,
        signal: client.signal,
      });
      await sleep(150);
      client.abort();
      hangUps.push(outcomeStatus(await sent));
    }
    expect(hangUps).toEqual([499, 499]);
    // Two an hour: both hang-ups counted.
    const after = await capture({
      apiKey: key,
      request: () => ({ url: 'https://a.test/x' }),
      deadline: now + 60_000,
    });
    expect(outcomeStatus(after)).toBe(429);
    await usage.flush();
    expect(usageStore.records.map((record) => record.status)).toEqual([499, 499, 429]);
    expect(await base.credits.balance('acct')).toBe(10);
  });
});

describe('a key revoked while its request waits for a lookups turn', () => {
  /** Red team (round 31): this 401, unlike the first authentication's, left a usage record (a failed request). */
  it('fails it 401 as soon as its turn comes, before any of its work, and leaves no usage record', async () => {
    const now = Date.UTC(2026, 0, 1, 10, 30);
    const [admission, lookups] = [queue(), queue()];
    const { capture, credits, addKey, keyManagement, renderer, usage, usageStore } = memoryScreenshotService({
      now: () => now,
      admission,
      lookups,
    });
    const { key, id } = await addKey('owner', now);
    await credits.set('owner', 10);
    // Other accounts hold the only capture place, and the lookups' only place while a request is validated.
    let letGo = (): void => undefined;
    let captured = (): void => undefined;
    const capturing = admission.run('third', () => new Promise<void>((resolve) => (captured = resolve)));
    const held = lookups.run('other', () => new Promise<void>((resolve) => (letGo = resolve)));
    const waiting = capture({
      apiKey: key,
      request: () => ({ url: 'https://owner.test/page' }),
      deadline: now + 60_000,
    });
    await sleep(50);
    await keyManagement.updateKey('session:owner', id, () => ({ isActive: false }));
    letGo();
    await held;
    const answer = await Promise.race([waiting, sleep(1_000).then(() => 'still waiting' as const)]);
    expect(answer === 'still waiting' ? answer : outcomeStatus(answer)).toBe(401);
    expect(renderer.captures).toHaveLength(0);
    await usage.flush();
    expect(usageStore.records).toEqual([]);
    captured();
    await capturing;
  });
});
