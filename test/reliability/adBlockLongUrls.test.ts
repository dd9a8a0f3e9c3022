import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferred } from '../helpers/deferred';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 11b): `blockAds` asks Ghostery's engine about every request of the page, synchronously, on the
 * renderer process's event loop (shared/capture/adBlocking.ts, the `Fetch.requestPaused` listener of
 * startRequestBlocking, `isBlocked`), with the request's whole URL. The engine's work grows with the URL's length at
 * about 0.3-0.6 ms per KB: one URL of 2 MB (Chromium's own bound) holds the event loop for 0.5-1.2 s, and a page can
 * ask for as many as it likes, in one line of script. While it runs, the renderer process does nothing else: no
 * DevTools message of any capture is read, no timer of any capture fires.
 *
 * Locally one renderer process serves every account: when the page's capture ends (its after-load budget), closing
 * its context waits behind the engine, "A stopped page did not close in time; replacing the browser" follows, and a
 * capture of another account in flight (a plain page, no option) fails with `500` "The browser stopped during the
 * capture" (or "Browser could not be started"), counted as ours. Without `blockAds` the same page's long URLs leave
 * the other capture answered (`200`), and with the engine reading each URL cut to 8 KB it is answered too (the same
 * with `blockChats`, whose engine takes about as long). Alone (deployed, one capture per renderer instance), the
 * page's own capture overran its 3 s budget (7.4 s) in 1 s steps, was put down to the page's scripts ("its scripts
 * kept the browser busy"), which were idle, and its browser was replaced all the same, a cold browser for whichever
 * capture that instance takes next.
 *
 * What should hold: a page cannot make our own per-request work hold the process; another account's capture beside it
 * is answered as usual. (Fix: bound the text the engine reads, e.g. match a URL cut to a few KB, or refuse URLs past a
 * length no real page sends, before `Request.fromRawDetails`.)
 *
 * Fixed: shared/capture/adBlocking.ts has the engines read 8 KB of a URL at most; shared/capture/answerWithin.ts reads
 * what came in while the process was held before it calls an answer late.
 */

/**
 * Shortened after load, as in test/reliability/hostilePages.test.ts (the enforcing code is the deployed one); the
 * navigation keeps a long budget so that the other account's page can wait, loading, for the hostile capture's end.
 */
const BUDGETS = { navigationMs: 60_000, afterLoadMs: 3_000 };
/** Long URLs the page asks for: 15-30 s of the engine's time in all, on a 2-core machine. */
const LONG_URLS = 30;

let pages: PageServer;
let harness: ScreenshotHarness;
/** Resolved when the hostile page's script has run: its long requests are being made now. */
let started = deferred();
/** The other account's page's image, answered once the hostile capture has been answered. */
const held: import('node:http').ServerResponse[] = [];
/** Set once the hostile capture was answered: an image asked for after that is answered at once. */
let released = false;

beforeAll(async () => {
  pages = await startPageServer({
    '/hostile': solidPage(
      '#0f0',
      '',
      // One long URL first, then the mark (the engine has read one such URL by then), then the rest.
      `<script>
        const tail = '?'.repeat(2_000_000);
        const first = new Image();
        first.onerror = first.onload = () => fetch('/started').then(() => {
          for (let i = 1; i < ${LONG_URLS}; i++) new Image().src = '/x' + i + '?' + tail;
        });
        first.src = '/x0?' + tail;
      </script>`,
    ),
    '/started': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      started.resolve();
    },
    '/plain': solidPage('#00f'),
    // Loading until the test lets its image go: the capture is in flight for as long as the hostile one.
    '/other': solidPage('#00f', '', '<img src="/hold" width="10" height="10">'),
    '/hold': (_, res) => {
      if (released) return res.writeHead(404).end();
      held.push(res);
    },
  });
  harness = await startScreenshotHarness(
    { ALLOW_PRIVATE_HOSTS: pages.hostPort, RATE_LIMIT_PER_HOUR: '1000', FREE_CREDITS: '1000' },
    { budgets: BUDGETS },
  );
  // Warm: the browser is up and the ads engine is loaded before the test.
  const warm = await harness.newAccount();
  const first = await harness.shoot(warm.apiKey, {
    url: `${pages.origin}/plain`,
    width: 400,
    height: 320,
    blockAds: true,
  });
  expect(first.status).toBe(200);
}, 120_000);

afterAll(async () => {
  for (const res of held) res.destroy();
  await harness?.close();
  await pages?.close();
});

async function besideLongUrls(switches: { blockAds?: boolean; blockChats?: boolean }) {
  started = deferred();
  released = false;
  const attacker = await harness.newAccount();
  const victim = await harness.newAccount();
  const hostile = harness.shoot(attacker.apiKey, {
    url: `${pages.origin}/hostile`,
    width: 400,
    height: 320,
    ...switches,
  });
  await started.promise;
  // Another account's capture of a plain page, started as the hostile page makes its long requests, and loading
  // until the hostile capture has been answered.
  const other = harness.shoot(victim.apiKey, { url: `${pages.origin}/other`, width: 400, height: 320 });
  await hostile;
  // On a loaded machine the other page may ask for its image only now (CI: it waited out its 60 s budget).
  released = true;
  for (const res of held.splice(0)) res.writeHead(404).end();
  return other;
}

describe("a page's long URLs under blockAds", () => {
  it("leave another account's capture beside them answered when the engine is off (control)", {
    timeout: 180_000,
  }, async () => {
    const other = await besideLongUrls({});
    expect(other.status, other.body.toString('utf8').slice(0, 300)).toBe(200);
  });

  it("do not make another account's capture beside them fail", { timeout: 180_000 }, async () => {
    const other = await besideLongUrls({ blockAds: true });
    // Today: 500 "The browser stopped during the capture" (or "Browser could not be started" for a capture that
    // asked for its tab meanwhile): the hostile page's context did not close in time while the engine held the
    // event loop, and the browser every account shares was replaced. Matching a URL cut to 8 KB makes it 200.
    expect(other.status, other.body.toString('utf8').slice(0, 300)).toBe(200);
  });

  it("do not make another account's capture beside them fail, under blockChats either", {
    timeout: 180_000,
  }, async () => {
    const other = await besideLongUrls({ blockChats: true });
    expect(other.status, other.body.toString('utf8').slice(0, 300)).toBe(200);
  });
});
