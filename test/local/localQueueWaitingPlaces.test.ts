import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, slowPage, solidPage, startPageServer } from '../helpers/pageServer';
import { awayFromWindowEdge } from '../helpers/rateWindow';

/**
 * Red team (round 13b), capacity: the local admission queue (local/admissionQueue.ts) shares its *running* places
 * fairly (the waiting account that runs the fewest goes next), but its *waiting* places (LOCAL_MAX_QUEUED) are one
 * pool, first come first served, with no bound per account. One account may fill every one of them, far past what it
 * may run itself (MAX_CONCURRENT_CAPTURES) and past what its rate window lets it do: a request is counted against the
 * window, and the new FullWindows memo refuses it, only once it has left the queue (captureScreenshot's `admitted`).
 * Its waiting requests cost it nothing (here all but one of them are answered 429 for free when they finally run),
 * yet while they wait every other account whose request must wait is turned away with 503 at once: the fair order
 * that would have run the other account first never gets to see its request.
 *
 * Setup (npm start's service over HTTP, real Chromium and dynalite): 2 shared places + 1 of headroom, 8 waiting
 * places, a rate limit of 3. Account B runs two captures of a page that takes 8 s (both shared places), account C one
 * (the headroom), then B sends 8 more requests (its window has room for one of them). Account V, which runs nothing,
 * asks for one capture: it is answered 503 at once, though fair sharing would start it before any of B's waiting
 * requests as soon as a place frees (about 8 s later).
 *
 * Fixed: when every waiting place is taken, a request of an account that waits with fewer takes the place of the
 * latest request of the account that waits with the most, which waits aside for the next place that frees
 * (local/admissionQueue.ts); and a window known full refuses before the queue (shared/screenshot/captureScreenshot.ts).
 */

const SLOW_MS = 8_000;

let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  await awayFromWindowEdge(60_000);
  pages = await startPageServer({
    '/red': solidPage('#ff0000'),
    ...slowPage(SLOW_MS),
  });
  service = await startTestLocalService({
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    FREE_CREDITS: '20',
    RATE_LIMIT_PER_HOUR: '3',
    LOCAL_MAX_CAPTURES: '2',
    CAPTURE_HEADROOM: '1',
    LOCAL_MAX_QUEUED: '8',
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

async function shoot(apiKey: string, url: string): Promise<Response> {
  const response = await service.request('/api/screenshot', { bearer: apiKey, body: { url } });
  await response.arrayBuffer();
  return response;
}

const statusOf = async (answer: Promise<Response>) => (await answer).status;

/** Sends a capture request and hangs up on it after `afterMs`. */
async function sendAndHangUp(apiKey: string, url: string, afterMs: number): Promise<void> {
  const controller = new AbortController();
  const sent = fetch(`${service.url}/api/screenshot`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url }),
    signal: controller.signal,
  }).catch(() => undefined);
  await sleep(afterMs);
  controller.abort();
  await sent;
}

describe('the local queue’s waiting places', () => {
  it('are not all taken by one account whose waiting requests cost it nothing', async () => {
    const [b, c, v] = [await service.newAccount(), await service.newAccount(), await service.newAccount()];
    const slow = `${pages.origin}/slow`;

    // Both shared places (B) and the headroom (C) run captures of a page that loads in 8 s.
    const running = [statusOf(shoot(b.apiKey, slow)), statusOf(shoot(b.apiKey, slow))];
    await sleep(1_000);
    running.push(statusOf(shoot(c.apiKey, slow)));
    await sleep(1_000);
    // B fills every waiting place; its window has room for one more request, the other seven are refused 429.
    const waitingB = Array.from({ length: 8 }, (_, i) =>
      statusOf(shoot(b.apiKey, `${pages.origin}/red?b=${i}`)),
    );
    await sleep(1_500);

    const started = Date.now();
    const victim = await statusOf(shoot(v.apiKey, `${pages.origin}/red?v`));
    const victimMs = Date.now() - started;

    const [bStatuses, runningStatuses] = await Promise.all([Promise.all(waitingB), Promise.all(running)]);
    expect(runningStatuses).toEqual([200, 200, 200]);
    // What B's eight waiting requests came to: one capture, seven free 429s (its latest made way for V, waited
    // aside, and came back as places freed).
    expect([...bStatuses].sort()).toEqual([200, 429, 429, 429, 429, 429, 429, 429]);
    // Before the fix: V is answered 503 at once (in a few ms), never having waited.
    expect({ victim, answeredAtOnce: victimMs < 1_000 }).toEqual({ victim: 200, answeredAtOnce: false });
  }, 60_000);

  /**
   * Red team (round 13b), capacity: a request waiting in the local admission queue (local/admissionQueue.ts) whose
   * client has hung up keeps its waiting place until a running place frees. Its signal is aborted (the local server
   * reports the hang-up), but nothing listens for that while it waits: captureScreenshot only checks
   * `input.signal.aborted` once the task starts, and then drops it. So a client can send LOCAL_MAX_QUEUED requests
   * and go away at once: nothing is counted against its rate window (that happens after the queue), nothing is
   * charged, no connection stays open on its side, and while the running places are busy every other account whose
   * request must wait is answered 503 at once. It can repeat that as often as it likes, at the cost of one HTTP request
   * per place.
   *
   * Setup (npm start's service over HTTP, real Chromium and dynalite): 2 shared places + 1 of headroom, 8 waiting
   * places. Accounts A and C hold the three places with captures of a page that takes 8 s. Account B sends 8 requests
   * and hangs up on each half a second later. Account V then asks for a capture: answered 503 in a few ms, though no
   * live request is waiting ahead of it. Afterwards B's window shows none of its 8 requests counted.
   *
   * Fixed: AdmissionQueue.run takes the request's AbortSignal, and a waiter whose signal aborts leaves the queue at once
   * (ClientGoneError); captureScreenshot passes `input.signal` along.
   */
  it('gives its waiting place up, so another account is not turned away 503', async () => {
    const [a, b, c, v] = [
      await service.newAccount(),
      await service.newAccount(),
      await service.newAccount(),
      await service.newAccount(),
    ];
    const slow = `${pages.origin}/slow`;
    // Both shared places (A) and the headroom (C) run captures of a page that loads in 8 s.
    const running = [shoot(a.apiKey, slow), shoot(a.apiKey, slow)];
    await sleep(1_000);
    running.push(shoot(c.apiKey, slow));
    await sleep(1_000);

    // B sends 8 requests and goes away from each of them.
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => sendAndHangUp(b.apiKey, `${pages.origin}/red?b=${i}`, 500)),
    );
    await sleep(300);

    const started = Date.now();
    const victim = (await shoot(v.apiKey, `${pages.origin}/red?v`)).status;
    const victimMs = Date.now() - started;

    expect((await Promise.all(running)).map((response) => response.status)).toEqual([200, 200, 200]);
    // B's requests cost it nothing: none counted in its window, nothing charged.
    const bWindow = await shoot(b.apiKey, `${pages.origin}/red?after`);
    expect(bWindow.headers.get('x-ratelimit-remaining')).toBe('2');
    // Nor in its usage: as deployed, where they would never have reached a function (red team, round 22: eight
    // records of requests the window never counted).
    expect(await service.usageLastHour(b.token, 1)).toEqual({ captures: 1, failed: 0, credits: 1 });
    // Before the fix: V is answered 503 at once, while only requests nobody waits for are queued ahead of it.
    expect({ victim, answeredAtOnce: victimMs < 1_000 }).toEqual({ victim: 200, answeredAtOnce: false });
  }, 60_000);
});
