import { describe, expect, it } from 'vitest';
import { admissionOverPorts } from '../../shared/accounts/admissionRound';
import type { HostLookup } from '../../shared/egress/egressGate';
import { createUrlPolicy } from '../../shared/egress/urlPolicy';
import { RateLimitedError } from '../../shared/errors';
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

describe('a batch from an account whose rate window is spent', () => {
  it('is refused 429 without looking up any of its hosts', async () => {
    const now = () => Date.now();
    const service = memoryScreenshotService({ now, rateLimit: 0 });
    const { key } = await service.addKey('acct-spent', now());
    const looked: string[] = [];
    const lookup: HostLookup = async (hostname) => {
      looked.push(hostname);
      return [{ address: '93.184.216.34', family: 4 }];
    };
    const submit = submitBatch({
      keys: service.keys,
      credits: service.credits,
      admissions: admissionOverPorts({
        keys: service.keys,
        credits: service.credits,
        rateLimiter: new MemoryRateLimiter(0),
        signedLinkBudget: new MemoryRateLimiter(0),
        captureSlots: new MemoryCaptureSlots(10),
      }),
      urlPolicy: createUrlPolicy({ allowPrivateHosts: '', lookup }),
      acceptJobs: async () => {
        throw new Error('nothing is accepted past the rate limit');
      },
      pendingRefunds: new MemoryPendingRefunds(),
      metrics: new InMemoryServiceMetrics(),
      now,
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
