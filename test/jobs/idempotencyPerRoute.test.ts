import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * Red team: an Idempotency-Key answers "the first answer again" for the same key and body (docs/api.md 19.5). Under
 * `npm start` the screenshot route and the batch route share one process, and Powertools prefixes its records with the
 * Lambda function's name, which a local process does not have: a batch request sent with the key and body of an
 * accepted async capture is answered with that capture's job (202, `job_…`, a /api/jobs statusUrl) instead of the
 * 400 its body earns on the batch route. Deployed, the two routes are different functions, so the records differ.
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
