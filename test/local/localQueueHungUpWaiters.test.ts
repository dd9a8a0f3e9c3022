import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

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

const SLOW_MS = 8_000;

let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  pages = await startPageServer({
    '/red': solidPage('#ff0000'),
    '/slow': solidPage('#00ff00', '', '<img src="/slow.png">'),
    '/slow.png': (_, res) => {
      setTimeout(() => res.writeHead(404).end(), SLOW_MS);
    },
  });
  service = await startTestLocalService({
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    FREE_CREDITS: '20',
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

describe('a request waiting in the local queue whose client hung up', () => {
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
    expect(bWindow.headers.get('x-ratelimit-remaining')).toBe('99');
    // Before the fix: V is answered 503 at once, while only requests nobody waits for are queued ahead of it.
    expect({ victim, answeredAtOnce: victimMs < 1_000 }).toEqual({ victim: 200, answeredAtOnce: false });
  }, 60_000);
});
