import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferred } from '../helpers/deferred';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { awayFromWindowEdge, SUITE_MARGIN_MS, SUITE_WAIT_HOOK_TIMEOUT_MS } from '../helpers/rateWindow';

/**
 * Red team, round 13: locally, an account whose hourly window is spent fills the capture queue's waiting places with
 * requests that are sure to be refused (429, free), and another account's request is answered 503 instead of
 * waiting its fair turn.
 *
 * What it shows: `npm start` puts every authenticated screenshot request into the fair capture queue
 * (local/admissionQueue.ts) before the use case looks at anything, and the queue's waiting places
 * (`LOCAL_MAX_QUEUED`) are one bound for all accounts. The process already knows the spender's window is full
 * (shared/accounts/fullWindows.ts: every later request of that account is refused 429 "before any other work"), but
 * that refusal runs inside the queued task, so each of those requests first waits for a capture place. While the
 * places are busy (here one slow capture of a third account), the spender's free requests take every waiting place
 * and the victim, who has nothing running and nothing waiting, gets `503` at once. docs/api.md 6.5 promises that
 * "no account holds more than its share while others wait"; here the share is the whole queue, for requests that cost
 * their sender nothing (its window is spent: no credits, no count).
 *
 * Why it matters: locally one queue serves every account (npm start, the tests' local service, the load run).
 * Whoever holds one account's key and keeps a few dozen requests in flight locks other accounts out with 503 for as
 * long as the capture places are busy, at no cost. Deployed there is no such queue (Lambda's concurrency).
 *
 * Fixed: what FullWindows already knows refused is answered before `admission.run`
 * (shared/screenshot/captureScreenshot.ts), and a full queue makes way for an account that waits with fewer
 * (local/admissionQueue.ts).
 */

let pages: PageServer;
let service: TestLocalService;
const slowAsked = deferred();
const release = deferred();

beforeAll(async () => {
  await awayFromWindowEdge(SUITE_MARGIN_MS);
  pages = await startPageServer({
    '/red': solidPage('#ff0000'),
    '/slow': (_req, res) => {
      slowAsked.resolve();
      void release.promise.then(() =>
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(solidPage('#00ff00')),
      );
    },
  });
  service = await startTestLocalService({
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    RATE_LIMIT_PER_HOUR: '1',
    LOCAL_MAX_CAPTURES: '1',
    CAPTURE_HEADROOM: '0',
    LOCAL_MAX_QUEUED: '2',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  });
}, SUITE_WAIT_HOOK_TIMEOUT_MS);

afterAll(async () => {
  release.resolve();
  await service?.close();
  await pages?.close();
});

const shoot = (apiKey: string, path: string) =>
  service.request('/api/screenshot', {
    bearer: apiKey,
    body: { url: `${pages.origin}${path}`, width: 320, height: 320 },
  });

describe('the local capture queue', () => {
  it("does not let one account's requests, refused anyway, take the places another account waits in", async () => {
    const [spender, busy, victim] = [
      await service.newAccount(),
      await service.newAccount(),
      await service.newAccount(),
    ];
    // The spender uses its hour (limit 1), and the process learns its window is full.
    expect((await shoot(spender.apiKey, '/red')).status).toBe(200);
    expect((await shoot(spender.apiKey, '/red')).status).toBe(429);

    // Another account's capture takes the one capture place, held until the test lets its page answer.
    const busyAnswer = shoot(busy.apiKey, '/slow');
    await slowAsked.promise;

    // The spender's requests: each will be refused 429 at once, free, but first waits for a place.
    const spent = [shoot(spender.apiKey, '/red'), shoot(spender.apiKey, '/red')];
    await sleep(3_000);

    // The victim runs nothing and waits for nothing: it should wait its turn, not be refused for a full queue.
    const victimAnswer = shoot(victim.apiKey, '/red');
    await sleep(500);
    release.resolve();

    const statuses = {
      busy: (await busyAnswer).status,
      spender: await Promise.all(spent.map(async (answer) => (await answer).status)),
      victim: (await victimAnswer).status,
    };
    expect(statuses).toEqual({ busy: 200, spender: [429, 429], victim: 200 });
  }, 60_000);
});
