import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhookReceiver';
import { type DescribedApi, describedApi, type Json } from '../openapi/documentSchemas';

/**
 * Red team (round 20): docs/api.md 18.3 says a webhook's outcome (pending, delivered or failed, the attempts, the last
 * status) is on the job or batch, yet GET /api/batches/{id} had no `webhook` field (nor had the OpenAPI Batch schema)
 * and a batch's jobs carry `webhook: null`: a batch's delivery could be seen nowhere. Fixed: the batch's view carries
 * its stored outcome (shared/jobs/jobView.ts), and the Batch schema describes it.
 */

let api: DescribedApi;
let receiver: WebhookReceiver;
let service: TestLocalService;
/** The receiver fails the first attempt at /flaky, answers 204 otherwise. */
let flakyAttempts = 0;

beforeAll(async () => {
  api = await describedApi();
  receiver = await startWebhookReceiver((request, response) => {
    if (request.path === '/flaky' && ++flakyAttempts === 1) response.writeHead(503).end();
    else response.writeHead(204).end();
  });
  service = await startTestLocalService(
    { ALLOW_PRIVATE_HOSTS: receiver.hostPort, POWERTOOLS_METRICS_DISABLED: 'true' },
    // Seconds instead of minutes: the schedule's shape is the webhook module's own test.
    { webhookRetryDelaySeconds: (attempt) => (attempt < 8 ? 2 : undefined) },
  );
}, 120_000);

afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

/** GET /api/batches/{id} through the local server, checked against the document's Batch schema. */
async function batchOf(id: string, apiKey: string): Promise<Json> {
  const response = await service.request(`/api/batches/${id}`, { bearer: apiKey });
  expect(response.status).toBe(200);
  const body = await response.json();
  const schema = api.operation('GET', '/api/batches/{id}').responses['200'].content['application/json']
    .schema;
  expect(schema.required).toContain('webhook');
  expect(api.check(schema, body)).toEqual([]);
  return body;
}

async function waitForBatch(id: string, apiKey: string, done: (batch: Json) => boolean): Promise<Json> {
  const until = Date.now() + 60_000;
  for (;;) {
    const batch = await batchOf(id, apiKey);
    if (done(batch)) return batch;
    if (Date.now() > until) throw new Error(`Still not done: ${JSON.stringify(batch)}`);
    await sleep(100);
  }
}

describe("a batch's webhook", () => {
  it('shows its outcome on GET /api/batches/{id}: pending after a failed attempt, then delivered', async () => {
    const account = await service.newAccount();
    const webhookUrl = `${receiver.origin}/flaky`;
    const accepted = await service.request('/api/batches', {
      bearer: account.apiKey,
      body: { requests: [{ html: '<h1>one</h1>' }, { html: '<h1>two</h1>' }], webhookUrl },
    });
    expect(accepted.status).toBe(202);
    const { id } = await accepted.json();

    const pending = await waitForBatch(id, account.apiKey, (batch) => batch.webhook?.attempts === 1);
    expect(pending.webhook).toEqual({ url: webhookUrl, status: 'pending', attempts: 1, lastStatus: 503 });
    const delivered = await waitForBatch(id, account.apiKey, (batch) => batch.webhook?.status !== 'pending');
    expect(delivered.webhook).toEqual({ url: webhookUrl, status: 'delivered', attempts: 2, lastStatus: 204 });
    expect(receiver.received.map((request) => request.headers['webhook-id'])).toEqual([
      `msg_${id}`,
      `msg_${id}`,
    ]);
  }, 90_000);

  it('is null without a webhookUrl', async () => {
    const account = await service.newAccount();
    const accepted = await service.request('/api/batches', {
      bearer: account.apiKey,
      body: { requests: [{ html: '<h1>one</h1>' }] },
    });
    const { id } = await accepted.json();
    const batch = await waitForBatch(id, account.apiKey, (body) => body.status === 'completed');
    expect(batch.webhook).toBeNull();
  }, 90_000);
});
