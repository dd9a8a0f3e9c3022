import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * POST /api/batches beside the screenshot route, in one local process as `npm start` runs them (red team):
 * - An Idempotency-Key answers "the first answer again" for the same key and body (docs/api.md 19.5). Powertools
 *   prefixes its records with the Lambda function's name, which a local process does not have: a batch request sent
 *   with the key and body of an accepted async capture was answered with that capture's job (202, `job_…`) instead of
 *   the 400 its body earns on the batch route. Deployed, the two routes are different functions.
 * - A batch's `webhookUrl` follows an async capture's rules (shared/screenshot/schema.ts webhookUrlField): the batch
 *   route had a schema of its own, which took a user name and password (kept in clear in the batch item).
 */

let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  pages = await startPageServer({ '/page': solidPage('#00ff00') });
  service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
});

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

describe('an Idempotency-Key used on the screenshot route', () => {
  it('is not answered with that capture by the batch route', async () => {
    const { apiKey } = await service.newAccount();
    const body = JSON.stringify({ url: `${pages.origin}/page`, async: true });
    const post = (path: string) =>
      fetch(`${service.url}${path}`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${apiKey}`,
          'Content-Type': 'application/json',
          'Idempotency-Key': 'order-42',
        },
        body,
      });

    const accepted = await post('/api/screenshot');
    expect(accepted.status).toBe(202);
    expect((await accepted.json()).id).toMatch(/^job_/);

    const batch = await post('/api/batches');
    const answer = await batch.json();
    // Before: 202 with the screenshot's job, as if the batch route had accepted it.
    expect(answer.id ?? '').not.toMatch(/^job_/);
    expect(batch.status).toBe(400);
  });
});

describe("a batch's webhookUrl carrying a user name or password", () => {
  it('is refused 400 invalid_format naming webhookUrl, as on the screenshot route', async () => {
    const { apiKey } = await service.newAccount();
    const answer = await service.request('/api/batches', {
      bearer: apiKey,
      body: {
        requests: [{ url: `${pages.origin}/page` }],
        webhookUrl: `http://hook:hunter2@${pages.hostPort}/hooks`,
      },
    });
    const body = await answer.json();
    if (answer.status === 202) {
      // Before: accepted, and the batch view answers the password back.
      const view = await (await service.request(`/api/batches/${body.id}`, { bearer: apiKey })).text();
      expect(view, 'the batch view echoes the password').not.toContain('hunter2');
    }
    expect(answer.status).toBe(400);
    expect(body.details).toEqual([expect.objectContaining({ path: ['webhookUrl'], code: 'invalid_format' })]);
  }, 60_000);
});

/**
 * Red team (round 24): a batch's request was checked as a synchronous body, where `metadata` needs
 * `response: "json"`, which a batch refuses: no batch could ask for metadata, though every job's result is that body.
 */
describe("a batch's request asking for metadata", () => {
  it('is accepted, and its job answers the page metadata', async () => {
    const { apiKey } = await service.newAccount();
    const accepted = await service.request('/api/batches', {
      bearer: apiKey,
      body: { requests: [{ html: '<title>Batched</title><p>x</p>', metadata: true }] },
    });
    expect(accepted.status, await accepted.clone().text()).toBe(202);
    const [job] = (await accepted.json()).jobs as { id: string }[];
    await vi.waitFor(
      async () => {
        const answer = await (await service.request(`/api/jobs/${job?.id}`, { bearer: apiKey })).json();
        expect(answer.status).toBe('succeeded');
        expect(answer.result.metadata).toMatchObject({ title: 'Batched' });
      },
      { timeout: 60_000, interval: 250 },
    );
  });
});
