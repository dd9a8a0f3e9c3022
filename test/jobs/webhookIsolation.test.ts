import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhookReceiver';

/**
 * A webhook receiver that never answers holds its place for the 10 s of each attempt. Those attempts are delivered
 * apart from the captures (their own queue and pollers locally, their own queue and event source deployed), so one
 * account's hanging receiver never keeps another account's job waiting (red team: 0.3 s became 32 s), and there are
 * enough places that its hanging attempts do not keep another account's delivery waiting either.
 */

/**
 * More hanging attempts at once than `npm start` has pollers for captures (LOCAL_MAX_CAPTURES, 4), and than it had
 * places for webhook attempts before they were batched (8).
 */
const HANGING = 12;

let receiver: WebhookReceiver;
let service: TestLocalService;
/** Attempts at /hang whose connection our client gave up on (at the end of its 10 s). */
let givenUp = 0;

beforeAll(async () => {
  receiver = await startWebhookReceiver((request, response) => {
    if (request.path !== '/hang') return void response.writeHead(204).end();
    // Never answered: only the sender's own time limit ends the attempt.
    response.once('close', () => givenUp++);
  });
  service = await startTestLocalService(
    { ALLOW_PRIVATE_HOSTS: receiver.hostPort, POWERTOOLS_METRICS_DISABLED: 'true' },
    // No retry within the test: the first attempts are what hold the workers.
    { webhookRetryDelaySeconds: () => undefined },
  );
}, 120_000);

afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

async function submit(apiKey: string, body: Record<string, unknown>): Promise<string> {
  const response = await service.request('/api/screenshot', {
    bearer: apiKey,
    body: { ...body, async: true },
  });
  expect(response.status).toBe(202);
  return (await response.json()).id;
}

async function job(apiKey: string, id: string) {
  return (await service.request(`/api/jobs/${id}`, { bearer: apiKey })).json();
}

describe('a webhook receiver that never answers', () => {
  it("keeps no other account's job or delivery waiting while its attempts hang", async () => {
    const [hostile, other] = [await service.newAccount(), await service.newAccount()];
    await Promise.all(
      Array.from({ length: HANGING }, (_, i) =>
        submit(hostile.apiKey, { html: `<h1>${i}</h1>`, webhookUrl: `${receiver.origin}/hang` }),
      ),
    );
    // Every capture ran, and every webhook attempt now hangs on the receiver.
    await vi.waitFor(
      () => expect(receiver.received.filter((request) => request.path === '/hang')).toHaveLength(HANGING),
      { timeout: 30_000, interval: 100 },
    );
    const id = await submit(other.apiKey, { html: '<h1>other</h1>', webhookUrl: `${receiver.origin}/other` });
    let finished: { status: string } | undefined;
    while (!finished) {
      const current = await job(other.apiKey, id);
      if (current.status === 'succeeded' || current.status === 'failed') finished = current;
      else await sleep(100);
    }
    expect(finished.status).toBe('succeeded');
    // Its own webhook too.
    await vi.waitFor(
      () => expect(receiver.received.some((request) => request.path === '/other')).toBe(true),
      {
        timeout: 30_000,
        interval: 100,
      },
    );
    // Done while every hanging attempt still held its place: it never waited for one to give up.
    expect(givenUp).toBe(0);
  }, 60_000);
});
