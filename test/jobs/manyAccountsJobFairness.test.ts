import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * Red team (round 20): locally, each account with a job backlog kept one job waiting in the capture queue, and each
 * such job holds a place of the job poller (shared + headroom + 2 = 8). Four accounts' batches (4 running, 4 waiting)
 * held all eight, so a newcomer's async job was not even read until a capture ended (27 to 83 s) while its
 * synchronous capture started at once on the free headroom. Fixed: one job of all accounts waits in the capture queue
 * (the others go back to the job queue for 2 s), and the poller has a place more than run and wait there
 * (local/admissionQueue.ts `runJob`, `pollerPlaces`), so the newcomer's message is read and starts on the headroom.
 *
 * Each account may run one capture (MAX_CONCURRENT_CAPTURES), so four accounts fill the shared part and leave the
 * headroom to the newcomer, as they did in the red team's run.
 */

const FILLERS = 4;
const SLOW_MS = 20_000;

let service: TestLocalService;

beforeAll(async () => {
  service = await startTestLocalService({
    POWERTOOLS_METRICS_DISABLED: 'true',
    LOCAL_MAX_CAPTURES: '4',
    CAPTURE_HEADROOM: '2',
    MAX_CONCURRENT_CAPTURES: '1',
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
}, 120_000);

async function get(path: string, apiKey: string) {
  return (await service.request(path, { bearer: apiKey })).json();
}

describe("several accounts' batches", () => {
  it("leave a newcomer's async job a poller place: it starts within seconds", async () => {
    const fillers = await Promise.all(Array.from({ length: FILLERS }, () => service.newAccount()));
    const batches = await Promise.all(
      fillers.map(async (filler, n) => {
        const accepted = await service.request('/api/batches', {
          bearer: filler.apiKey,
          body: {
            requests: Array.from({ length: 3 }, (_, i) => ({ html: `<h1>${n}.${i}</h1>`, delay: SLOW_MS })),
          },
        });
        expect(accepted.status).toBe(202);
        return { apiKey: filler.apiKey, id: (await accepted.json()).id as string };
      }),
    );
    // Every filler runs its one capture: the shared part is full, the headroom free.
    await vi.waitFor(
      async () => {
        const running = await Promise.all(
          batches.map(async ({ id, apiKey }) => (await get(`/api/batches/${id}`, apiKey)).counts.running),
        );
        expect(running).toEqual([1, 1, 1, 1]);
      },
      { timeout: 30_000, interval: 200 },
    );
    // Long enough for their next jobs to be read and wait (or go back to the job queue).
    await sleep(3_000);

    const newcomer = await service.newAccount();
    const submitted = Date.now();
    const response = await service.request('/api/screenshot', {
      bearer: newcomer.apiKey,
      body: { html: '<h1>newcomer</h1>', async: true },
    });
    expect(response.status).toBe(202);
    const { id } = await response.json();
    const job = await vi.waitFor(
      async () => {
        const current = await get(`/api/jobs/${id}`, newcomer.apiKey);
        expect(current.status).toBe('succeeded');
        return current;
      },
      { timeout: 60_000, interval: 100 },
    );
    // Before the fix: read only once a filler's capture ended, about SLOW_MS later.
    expect(job.startedAt - submitted).toBeLessThan(5_000);
    // Still before any filler's first capture ended.
    expect(job.finishedAt - submitted).toBeLessThan(SLOW_MS / 2);
  }, 120_000);
});
