import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_QUEUED_HTML_BYTES } from '../../shared/screenshot/schema';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * Red team (round 4, jobs): GET /api/jobs promises "the account's latest 50, newest first" (docs/api.md 19.2). The
 * list is one DynamoDB Query with `Limit: 50` and no following of LastEvaluatedKey, and a job's item keeps its
 * request (an `html` document of up to 256 KiB in an async capture): DynamoDB stops a Query page at 1 MB read, so
 * an account whose latest jobs carry large documents is shown only the first few of them.
 */

let service: TestLocalService;

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '20', POWERTOOLS_METRICS_DISABLED: 'true' });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

/** A document just under the async bound, each one its own. */
const largeDocument = (index: number) => {
  const head = `<h1>job ${index}</h1><!--`;
  const tail = '-->';
  return `${head}${'x'.repeat(MAX_QUEUED_HTML_BYTES - head.length - tail.length - 16)}${tail}`;
};

describe('GET /api/jobs', () => {
  it("lists every one of an account's latest jobs (fewer than 50), whatever the size of their requests", async () => {
    const account = await service.newAccount();
    const ids: string[] = [];
    for (let index = 0; index < 6; index++) {
      const accepted = await service.request('/api/screenshot', {
        bearer: account.apiKey,
        body: { html: largeDocument(index), async: true, width: 320, height: 320 },
      });
      expect(accepted.status).toBe(202);
      ids.push(((await accepted.json()) as { id: string }).id);
    }
    const listed = (await (await service.request('/api/jobs', { bearer: account.token })).json()) as {
      jobs: { id: string }[];
    };
    // Newest first: the six jobs, all of them (before: the first four only, the 1 MB Query page).
    expect(listed.jobs.map((job) => job.id)).toEqual([...ids].reverse());
  }, 120_000);
});
