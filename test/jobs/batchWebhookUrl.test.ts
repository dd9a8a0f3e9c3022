import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * A batch's `webhookUrl` follows an async capture's rules (shared/screenshot/schema.ts webhookUrlField). Red team: the
 * batch route had a schema of its own, which took a user name and password (kept in clear in the batch item) and did
 * not escape white space for the logs.
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
