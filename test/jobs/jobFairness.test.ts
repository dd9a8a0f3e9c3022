import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * `npm start` runs queued jobs on a few pollers. One account's long batch must not take them all: its jobs start only
 * where the capture queue has room at once, and wait in the queue otherwise, so another account's job is read and
 * starts in the headroom (red team: 0.3 s became 38 s behind a batch of slow pages, 135 s behind failing ones).
 */

/** More slow jobs than the local capture queue runs at once (LOCAL_MAX_CAPTURES, 4). */
const SLOW_JOBS = 10;
const SLOW_MS = 4000;

let service: TestLocalService;

beforeAll(async () => {
  service = await startTestLocalService({ POWERTOOLS_METRICS_DISABLED: 'true' });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

async function get(path: string, apiKey: string) {
  return (await service.request(path, { bearer: apiKey })).json();
}

describe("one account's long batch", () => {
  it("keeps no other account's job waiting, and still runs every one of its own, charged once", async () => {
    const [busy, other] = [await service.newAccount(), await service.newAccount()];
    const accepted = await service.request('/api/batches', {
      bearer: busy.apiKey,
      body: {
        requests: Array.from({ length: SLOW_JOBS }, (_, i) => ({ html: `<h1>${i}</h1>`, delay: SLOW_MS })),
      },
    });
    expect(accepted.status).toBe(202);
    const batchId = (await accepted.json()).id;
    // The batch fills the capture queue.
    await vi.waitFor(
      async () => expect((await get(`/api/batches/${batchId}`, busy.apiKey)).counts.running).toBe(4),
      { timeout: 30_000, interval: 100 },
    );
    const response = await service.request('/api/screenshot', {
      bearer: other.apiKey,
      body: { html: '<h1>other</h1>', async: true },
    });
    const { id } = await response.json();
    let job: { status: string } | undefined;
    while (!job) {
      const current = await get(`/api/jobs/${id}`, other.apiKey);
      if (current.status === 'succeeded' || current.status === 'failed') job = current;
      else await sleep(100);
    }
    expect(job.status).toBe('succeeded');
    // Done before any job of the batch: it never waited behind them.
    expect((await get(`/api/batches/${batchId}`, busy.apiKey)).counts.succeeded).toBe(0);

    // The batch's jobs, sent back to the queue while there was no room, all run, and are charged once each.
    await vi.waitFor(
      async () => expect((await get(`/api/batches/${batchId}`, busy.apiKey)).status).toBe('completed'),
      { timeout: 90_000, interval: 500 },
    );
    const batch = await get(`/api/batches/${batchId}`, busy.apiKey);
    expect(batch.counts).toEqual({ queued: 0, running: 0, succeeded: SLOW_JOBS, failed: 0 });
    const credits = await (await service.request('/api/credits', { bearer: busy.token })).json();
    expect(credits.balance).toBe(100 - SLOW_JOBS);
  }, 120_000);
});
