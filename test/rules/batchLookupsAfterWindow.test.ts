import { describe, expect, it } from 'vitest';
import { admissionOverPorts } from '../../shared/accounts/admissionRound';
import type { HostLookup } from '../../shared/egress/egressGate';
import { createUrlPolicy } from '../../shared/egress/urlPolicy';
import { InsufficientCreditsError, RateLimitedError, ValidationError } from '../../shared/errors';
import { submitBatch } from '../../shared/jobs/submitBatch';
import { InMemoryServiceMetrics } from '../helpers/inMemoryMetrics';
import { MemoryCaptureSlots, MemoryPendingRefunds, MemoryRateLimiter } from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * Red team (round 11, batches): docs/api.md 5.4 says each step of the order of checks "runs only if the ones before
 * it passed", the rate limit (step 2) before the body and "whether the URL's host may be reached" (step 3). A batch
 * resolves every one of its up to 100 URLs and its webhookUrl (two queries each, A and AAAA, on the service's name
 * servers) before it asks the rate window. An account whose window is spent is refused 429 for each batch, and each
 * refusal still has the service look up 101 names the caller chose: an unlimited stream of the service's DNS
 * queries (to the caller's own name servers, or against the resolver's per-interface packet limit shared with every
 * other account's captures), at a hundred times the rate of the screenshot route's one URL.
 *
 * Fixed: shared/jobs/submitBatch.ts looks the hosts up once the window let the batch in.
 */

/** POST /api/batches over in-memory ports with `rateLimit` and `lookup`; no job is ever accepted. */
function batchRoute(
  service: ReturnType<typeof memoryScreenshotService>,
  rateLimit: number,
  lookup: HostLookup,
) {
  return submitBatch({
    keys: service.keys,
    credits: service.credits,
    admissions: admissionOverPorts({
      keys: service.keys,
      credits: service.credits,
      rateLimiter: new MemoryRateLimiter(rateLimit),
      signedLinkBudget: new MemoryRateLimiter(rateLimit),
      captureSlots: new MemoryCaptureSlots(10),
    }),
    urlPolicy: createUrlPolicy({ allowPrivateHosts: '', lookup }),
    acceptJobs: async () => {
      throw new Error('no job is accepted here');
    },
    pendingRefunds: new MemoryPendingRefunds(),
    metrics: new InMemoryServiceMetrics(),
    now: () => Date.now(),
  });
}

describe('a batch from an account whose rate window is spent', () => {
  it('is refused 429 without looking up any of its hosts', async () => {
    const now = () => Date.now();
    const service = memoryScreenshotService({ now, rateLimit: 0 });
    const { key } = await service.addKey('acct-spent', now());
    const looked: string[] = [];
    const submit = batchRoute(service, 0, async (hostname) => {
      looked.push(hostname);
      return [{ address: '93.184.216.34', family: 4 }];
    });
    const body = {
      requests: Array.from({ length: 100 }, (_, index) => ({
        url: `https://n${index}.caller-zone.example/`,
      })),
      webhookUrl: 'https://hook.caller-zone.example/',
    };

    const outcome = await submit(key, () => body);

    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.error).toBeInstanceOf(RateLimitedError);
    // Before: all 101 hosts were resolved for a request refused at step 2.
    expect(looked).toEqual([]);
  });
});

/**
 * Red team (round 22): the batch's credits were reserved with its window, before its hosts were looked up, and given
 * back when a host was refused: meanwhile the account's own captures were refused 402 `available: 0` with a balance
 * that covered them, for a batch that cost nothing.
 */
describe('a batch whose hosts are being looked up', () => {
  it('holds none of the balance, and is refused 400 for a private host without having held any', async () => {
    const now = () => Date.now();
    const service = memoryScreenshotService({ now });
    const { key } = await service.addKey('acct-lookups', now());
    await service.credits.set('acct-lookups', 5);
    let answer: () => void = () => {};
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const submit = batchRoute(service, 100, async (hostname) => {
      await answered;
      return [{ address: hostname.startsWith('inside') ? '10.0.0.8' : '93.184.216.34', family: 4 }];
    });
    const requests = ['a', 'b', 'c', 'inside'].map((name) => ({ url: `https://${name}.example/` }));
    const outcome = submit(key, () => ({ requests }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Before: 1 while the hosts were looked up.
    expect(await service.credits.balance('acct-lookups')).toBe(5);
    answer();
    const refused = await outcome;
    expect(!refused.ok && refused.error).toBeInstanceOf(ValidationError);
    expect(await service.credits.balance('acct-lookups')).toBe(5);
  });

  it('is refused 402 once they are allowed, when the balance does not cover them all', async () => {
    const now = () => Date.now();
    const service = memoryScreenshotService({ now });
    const { key } = await service.addKey('acct-short', now());
    await service.credits.set('acct-short', 2);
    const submit = batchRoute(service, 100, async () => [{ address: '93.184.216.34', family: 4 }]);
    const requests = ['a', 'b', 'c'].map((name) => ({ url: `https://${name}.example/` }));
    const outcome = await submit(key, () => ({ requests }));
    expect(!outcome.ok && outcome.error).toBeInstanceOf(InsufficientCreditsError);
    expect(!outcome.ok && (outcome.error as InsufficientCreditsError).fields()).toEqual({
      required: 3,
      available: 2,
    });
    expect(await service.credits.balance('acct-short')).toBe(2);
  });
});
