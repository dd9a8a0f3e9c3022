import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runningRendererProcesses } from '../helpers/chromiumProcesses';
import { deferred } from '../helpers/deferred';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 11, trust boundaries): after a failed capture the front marks the renderer process suspect, and the
 * next capture first asks its Invoke API; a process that does not answer within 2 s is forgotten and a new one
 * started (local/renderer/localRenderer.ts, `forget`). The forgotten process is never stopped: it keeps its Node
 * process, its Chromium and its ports for as long as `npm start` runs, and a second browser serves beside it.
 *
 * A process that does not answer in 2 s need not be dead: its event loop is held while it decodes a large screenshot
 * (puppeteer's JSON.parse and base64 decode of a ~250 MB image took 2.2 s here), which any account's page of noise
 * asks for. Every such stall after a failed capture leaves one more Node process and Chromium running. Here the stall
 * is a SIGSTOP, which a process cannot tell from a long event-loop stall.
 *
 * Fixed: local/renderer/localRenderer.ts takes a process for dead only when its port refuses a connection, kills a
 * process it forgets, and opens a connection per invocation (a kept one, closed as idle when the process ran again,
 * reset the capture sent on it).
 */
let service: TestLocalService;
let pages: PageServer;
let apiKey: string;
let otherKey: string;
const stopped: number[] = [];
/** The slow page: `asked` resolves once the renderer asked for it, `answer` lets it be served. */
let slow = { asked: deferred(), answer: deferred() };

beforeAll(async () => {
  pages = await startPageServer({
    '/green': solidPage('#00ff00'),
    '/slow': (_req, res) => {
      slow.asked.resolve();
      void slow.answer.promise.then(() =>
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(solidPage('#00ff00')),
      );
    },
    '/broken': (_req, res) => {
      res.writeHead(500, { 'Content-Type': 'text/html' }).end('<html><body>down</body></html>');
    },
  });
  service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
  apiKey = (await service.newAccount()).apiKey;
  otherKey = (await service.newAccount()).apiKey;
}, 120_000);

afterAll(async () => {
  // Whatever the outcome, leave nothing of ours behind.
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await service?.close();
  await pages?.close();
});

const shoot = (body: Record<string, unknown>, bearer = apiKey) =>
  service.request('/api/screenshot', { bearer, body });

/**
 * Stops `pid` (as a long event-loop stall would), starts `work` (the next capture), and lets the process go on once
 * the front has started another renderer process in its place, or after 5 s at most: the length of the stall is the
 * scenario, nothing is timed. Resolves to what `work` started.
 */
async function stalledWhile<T>(pid: number, work: () => T): Promise<T> {
  const before = new Set(await runningRendererProcesses());
  process.kill(pid, 'SIGSTOP');
  stopped.push(pid);
  const started = work();
  for (let i = 0; i < 50; i++) {
    if ((await runningRendererProcesses()).some((other) => !before.has(other))) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  process.kill(pid, 'SIGCONT');
  return started;
}

describe('a renderer process that stalls after a failed capture', () => {
  it('is not left running beside the one that replaces it', async () => {
    // A capture that works: the process is up.
    expect((await shoot({ url: `${pages.origin}/green` })).status).toBe(200);
    const first = (await service.renderer.processInfo()).pid;
    // Any failed capture marks the process suspect (here a page answering 500 with failOnHttpError).
    expect((await shoot({ url: `${pages.origin}/broken`, failOnHttpError: true })).status).toBe(500);
    // The process stalls (as under a large image's decode) as the next capture comes.
    const next = await stalledWhile(first, () => shoot({ url: `${pages.origin}/green` }));
    expect((await next).status).toBe(200);
    // One renderer process serves the front: the one it gave up on (if it did) must not live on with its Chromium.
    let running = await runningRendererProcesses();
    for (let i = 0; i < 50 && running.length > 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      running = await runningRendererProcesses();
    }
    expect(running).toEqual([(await service.renderer.processInfo()).pid]);
  }, 180_000);

  it("does not take another account's capture down with it when it was only busy", async () => {
    expect((await shoot({ url: `${pages.origin}/green` })).status).toBe(200);
    const busy = (await service.renderer.processInfo()).pid;
    slow = { asked: deferred(), answer: deferred() };
    // Another account's capture is under way in the process.
    const theirs = shoot({ url: `${pages.origin}/slow` }, otherKey);
    await slow.asked.promise;
    // This account's page fails, then the process's event loop is held for a few seconds as this account's next
    // capture comes (SIGSTOP stands in for a large image's decode: puppeteer's JSON.parse and base64 decode of a
    // 250 MB screenshot held it 2.2 s here).
    expect((await shoot({ url: `${pages.origin}/broken`, failOnHttpError: true })).status).toBe(500);
    const mine = await stalledWhile(busy, () => shoot({ url: `${pages.origin}/green` }));
    // The stall is over: the process is alive and well, and the other account's page is served.
    slow.answer.resolve();
    const answer = await theirs;
    expect(answer.status, await answer.clone().text()).toBe(200);
    expect((await mine).status).toBe(200);
  }, 180_000);
});
