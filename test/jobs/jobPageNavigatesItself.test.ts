import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 17): the async form of test/security/pageNavigatesDuringOptions.test.ts. A page that reloads itself
 * once loaded, captured with `click`, failed as one of our faults, and runJob.ts retries those (isFinal): the worker
 * ran the hostile page again, up to MAX_JOB_RUNS (3) times, each a whole capture. Fixed with the classification: the
 * page's own failure runs once.
 */

let pages: PageServer;
let service: TestLocalService;
/** Captures of /reloads the browser started (the top-level navigation of goto, not the page's own reloads). */
let captures = 0;

const PAGE = solidPage(
  '#00ff00',
  '<script>onload = () => setTimeout(() => location.reload(), 0);</script>',
  '<p id="p">text</p><button id="b">b</button>',
);

beforeAll(async () => {
  pages = await startPageServer({
    '/reloads': (req, res) => {
      if (req.headers['sec-fetch-site'] === 'none') captures += 1;
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(PAGE);
    },
  });
  service = await startTestLocalService({
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    FREE_CREDITS: '10',
    POWERTOOLS_METRICS_DISABLED: 'true',
    // Retries come back quickly (the default is 10 s).
    LOCAL_QUEUE_VISIBILITY_SECONDS: '1',
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

describe('an async capture of a page that reloads itself, with click', () => {
  it('runs once and fails as the page’s (before: three times, as ours)', { timeout: 180_000 }, async () => {
    const account = await service.newAccount();
    const accepted = await service.request('/api/screenshot', {
      bearer: account.apiKey,
      body: { url: `${pages.origin}/reloads`, width: 320, height: 320, click: '#b', async: true },
    });
    expect(accepted.status).toBe(202);
    const { id } = (await accepted.json()) as { id: string };
    let job: { status: string; error: unknown } = { status: 'queued', error: null };
    const until = Date.now() + 150_000;
    while (job.status !== 'succeeded' && job.status !== 'failed') {
      if (Date.now() > until) throw new Error(`Still not done: ${JSON.stringify(job)}`);
      await sleep(250);
      job = (await (
        await service.request(`/api/jobs/${id}`, { bearer: account.apiKey })
      ).json()) as typeof job;
    }
    expect(job.status).toBe('failed');
    expect(captures).toBe(1);
  });
});
