import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumDescendants } from '../helpers/chromiumProcesses';
import { environmentOf } from '../helpers/egressFixtures';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import {
  BLUE,
  decodeImage,
  GREEN,
  near,
  type ScreenshotHarness,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

/**
 * What one customer's page leaves behind must be invisible to the next capture; a page's scripts must not read
 * other origins; Chromium must not hold the function's AWS credentials. All through the real handler and renderer.
 */

/** Stand-ins for the function's credentials, set where Lambda sets them: in the process environment. */
const FAKE_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: 'AKIAISOLATIONTESTKEY0',
  AWS_SECRET_ACCESS_KEY: 'isolation-test-secret-access-key-do-not-leak',
  AWS_SESSION_TOKEN: 'isolation-test-session-token-do-not-leak',
};

let site: PageServer;
let other: PageServer;
let harness: ScreenshotHarness;
let apiKey: string;
/** Cookie headers the server saw, per path. */
const cookiesSeen: Record<string, (string | undefined)[]> = {};
let cachedHits = 0;
/** What /options and /options-read saw of the customer's header and cookie, and of the browser's identity. */
const optionsSeen: {
  header: string | undefined;
  cookie: string | undefined;
  agent: string | undefined;
  language: string | undefined;
}[] = [];
const optionsSeenOf = (req: import('node:http').IncomingMessage) => ({
  header: req.headers['x-left-behind'] as string | undefined,
  cookie: req.headers.cookie,
  agent: req.headers['user-agent'],
  language: req.headers['accept-language'],
});
/** The identity the first capture of "capture options between captures" asks for; the next tab is prepared with it. */
const LEFT_BEHIND_AGENT = 'LeftBehind/1.0 (isolation test)';
let beacons = 0;
let swScriptHits = 0;
/** The server-side connection each request to /connection came on, numbered. */
const connectionsSeen: number[] = [];
/** Connections a request with X-Login signed in: a site that keeps its sign-in per connection (NTLM does). */
const signedIn = new WeakSet<Socket>();
const connectionIds = new WeakMap<Socket, number>();
let connections = 0;

/** A page that starts blue and turns green if `check` resolves true, red otherwise. */
function verdictPage(check: string): string {
  return `<!doctype html><html style="background:#00f"><head><meta charset="utf-8">
    <link rel="stylesheet" href="/cached.css">
    <script>
      (async () => { ${check} })().then(
        (ok) => { document.documentElement.style.background = ok ? '#0f0' : '#f00' },
        (e) => { document.documentElement.style.background = '#f00'; document.title = String(e) });
    </script></head><body></body></html>`;
}

const WRITE_STATE = `
  document.cookie = 'js=1; max-age=3600; path=/';
  localStorage.setItem('left', 'behind');
  sessionStorage.setItem('left', 'behind');
  await new Promise((resolve, reject) => {
    const open = indexedDB.open('leftover', 1);
    open.onupgradeneeded = () => open.result.createObjectStore('s').put('behind', 'k');
    open.onsuccess = () => { open.result.close(); resolve(); };
    open.onerror = () => reject(open.error);
  });
  await (await caches.open('leftover')).put('/leftover', new Response('behind'));
  // Service workers are refused in every capture: their registration must fail.
  const registered = await navigator.serviceWorker.register('/sw.js').then(() => true, () => false);
  // Only green if everything else really was stored, so the read side's "nothing there" means something.
  return document.cookie.includes('js=1') && document.cookie.includes('srv=1') && localStorage.length === 1 &&
    (await indexedDB.databases()).length === 1 && (await caches.keys()).length === 1 && !registered &&
    (await navigator.serviceWorker.getRegistrations()).length === 0;
`;

const READ_STATE = `
  const found = [];
  if (document.cookie !== '') found.push('cookie ' + document.cookie);
  if (localStorage.length > 0) found.push('localStorage');
  if (sessionStorage.length > 0) found.push('sessionStorage');
  if ((await indexedDB.databases()).length > 0) found.push('indexedDB');
  if ((await caches.keys()).length > 0) found.push('cache storage');
  if ((await navigator.serviceWorker.getRegistrations()).length > 0) found.push('service worker');
  if (navigator.serviceWorker.controller) found.push('controlled by a service worker');
  document.title = found.join(', ');
  return found.length === 0;
`;

const CROSS_ORIGIN_READ = (otherOrigin: string) => `
  const attempts = [
    fetch('${otherOrigin}/secret').then((r) => r.text()),
    fetch('${otherOrigin}/secret', { mode: 'no-cors' }).then((r) => r.text()),
    new Promise((resolve, reject) => {
      const x = new XMLHttpRequest();
      x.onload = () => resolve(x.responseText);
      x.onerror = () => reject(new Error('xhr'));
      x.open('GET', '${otherOrigin}/secret');
      x.send();
    }),
    new Promise((resolve, reject) => {
      const f = document.createElement('iframe');
      f.src = '${otherOrigin}/secret';
      f.onload = () => { try { resolve(f.contentDocument.body.innerHTML) } catch (e) { reject(e) } };
      document.documentElement.append(f);
    }),
  ];
  const results = await Promise.allSettled(attempts);
  return results.every((r) => r.status === 'rejected' || !String(r.value).includes('OTHER-ORIGIN-SECRET'));
`;

beforeAll(async () => {
  Object.assign(process.env, FAKE_CREDENTIALS);
  const record = (path: string, cookie: string | undefined) => {
    cookiesSeen[path] ??= [];
    cookiesSeen[path].push(cookie);
  };
  site = await startPageServer({
    '/write': (req, res) => {
      record('/write', req.headers.cookie);
      res.writeHead(200, {
        'Content-Type': 'text/html',
        'Set-Cookie': 'srv=1; Max-Age=3600; Path=/',
      });
      res.end(verdictPage(WRITE_STATE));
    },
    '/read': (req, res) => {
      record('/read', req.headers.cookie);
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(verdictPage(READ_STATE));
    },
    '/cached.css': (_, res) => {
      cachedHits += 1;
      res.writeHead(200, { 'Content-Type': 'text/css', 'Cache-Control': 'public, max-age=3600' }).end('p{}');
    },
    '/sw.js': (_, res) => {
      swScriptHits += 1;
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end(`self.addEventListener('fetch', (e) => e.respondWith(fetch(e.request)))`);
    },
    '/options': (req, res) => {
      optionsSeen.push(optionsSeenOf(req));
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><p>options');
    },
    '/options-beacon': (_, res) => {
      beacons += 1;
      res.writeHead(204).end();
    },
    '/options-read': (req, res) => {
      optionsSeen.push(optionsSeenOf(req));
      res
        .writeHead(200, { 'Content-Type': 'text/html' })
        .end(
          verdictPage(
            `return window.leftBehind === undefined && document.cookie === "" && !navigator.userAgent.includes("LeftBehind") && navigator.language === "en-US"`,
          ),
        );
    },
    '/connection': (req, res) => {
      const socket = req.socket;
      if (!connectionIds.has(socket)) connectionIds.set(socket, ++connections);
      connectionsSeen.push(connectionIds.get(socket) ?? 0);
      if (req.headers['x-login'] !== undefined) signedIn.add(socket);
      // Blue for the one who signed in; for anyone else red on a signed-in connection, green on a fresh one.
      const colour = req.headers['x-login'] !== undefined ? '#00f' : signedIn.has(socket) ? '#f00' : '#0f0';
      res
        .writeHead(200, { 'Content-Type': 'text/html' })
        .end(`<!doctype html><html style="background:${colour}"><body></body></html>`);
    },
    '/cross-origin': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(verdictPage(CROSS_ORIGIN_READ(other.origin)));
    },
    // A page that is not cross-origin isolated (no COOP/COEP) gets no shared memory, as in Chrome.
    '/shared-memory': verdictPage("return !crossOriginIsolated && typeof SharedArrayBuffer === 'undefined';"),
  });
  other = await startPageServer({
    // No CORS headers: a browser with web security on keeps this from the other origin's scripts.
    '/secret': '<p>OTHER-ORIGIN-SECRET</p>',
  });
  harness = await startScreenshotHarness({
    ALLOW_PRIVATE_HOSTS: `${site.hostPort},${other.hostPort}`,
    RATE_LIMIT_PER_HOUR: '1000',
    FREE_CREDITS: '1000',
    ...FAKE_CREDENTIALS,
  });
  ({ apiKey } = await harness.newAccount());
});

afterAll(async () => {
  await harness?.close();
  await Promise.all([site?.close(), other?.close()]);
  for (const name of Object.keys(FAKE_CREDENTIALS)) delete process.env[name];
});

async function captureColour(path: string, delay: number): Promise<[number, number, number]> {
  const response = await harness.shoot(apiKey, {
    url: `${site.origin}${path}`,
    width: 320,
    height: 320,
    delay,
  });
  expect(response.status).toBe(200);
  return (await decodeImage(response.body)).pixel(10, 10);
}

describe('state between captures', () => {
  it('lets a page store cookies, storage, IndexedDB and cache entries, and refuses it a service worker', async () => {
    expect(near(await captureColour('/write', 1500), GREEN)).toBe(true);
  });

  it('shows the next capture none of it', async () => {
    expect(near(await captureColour('/read', 800), GREEN)).toBe(true);
  });

  it('sends the next capture no cookie from the earlier one', () => {
    expect(cookiesSeen['/read']).toEqual([undefined]);
  });

  it('fetches again what the earlier capture had in its HTTP cache', () => {
    expect(cachedHits).toBe(2);
  });

  it('keeps nothing across several captures in a row', async () => {
    await captureColour('/write', 1500);
    await captureColour('/write', 1500);
    expect(near(await captureColour('/read', 800), GREEN)).toBe(true);
    expect(cookiesSeen['/write']?.every((cookie) => cookie === undefined)).toBe(true);
    // Refused before its script is fetched.
    expect(swScriptHits).toBe(0);
  });
});

describe('capture options between captures', () => {
  it('leaves no cookie, header, script or identity of one capture in the next', async () => {
    // So that the renderer is past its warm-up, whose first tab a capture arriving early would find prepared instead.
    await captureColour('/options-read', 0);
    const response = await harness.shoot(apiKey, {
      url: `${site.origin}/options`,
      width: 320,
      height: 320,
      headers: { 'X-Left-Behind': 'yes' },
      cookies: [{ name: 'given', value: 'yes' }],
      // The next capture's tab is prepared with this capture's identity (callers tend to repeat their settings): one
      // that asks for none must get the browser's own back.
      userAgent: LEFT_BEHIND_AGENT,
      locale: 'de-DE',
      // A script that would keep running and a global it leaves, were the page or context reused.
      js: 'window.leftBehind = true; setInterval(() => fetch("/options-beacon"), 50);',
      delay: 300,
    });
    expect(response.status).toBe(200);
    expect(optionsSeen.at(-1)).toMatchObject({
      header: 'yes',
      cookie: 'given=yes',
      agent: LEFT_BEHIND_AGENT,
    });
    expect(optionsSeen.at(-1)?.language).toMatch(/^de-DE/);
    const beaconsBefore = beacons;
    expect(beaconsBefore).toBeGreaterThan(0);

    expect(near(await captureColour('/options-read', 300), GREEN)).toBe(true);
    expect(optionsSeen.at(-1)).toMatchObject({ header: undefined, cookie: undefined });
    expect(optionsSeen.at(-1)?.agent).toMatch(/Chrome\/\d+/);
    expect(optionsSeen.at(-1)?.agent).not.toContain('LeftBehind');
    expect(optionsSeen.at(-1)?.language).toMatch(/^en-US/);
    // The first capture's page is gone: its interval sends nothing more.
    const settled = beacons;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(beacons).toBe(settled);
  });
});

describe('connections between captures', () => {
  it("never answers another account's capture on a connection an earlier capture opened", async () => {
    const other = await harness.newAccount();
    const first = await harness.shoot(apiKey, {
      url: `${site.origin}/connection`,
      width: 320,
      height: 320,
      headers: { 'X-Login': 'first-customer' },
    });
    expect(first.status).toBe(200);
    expect(near((await decodeImage(first.body)).pixel(10, 10), BLUE)).toBe(true);
    // Well within the idle time a kept-alive upstream connection would still be open.
    const second = await harness.shoot(other.apiKey, {
      url: `${site.origin}/connection`,
      width: 320,
      height: 320,
    });
    expect(second.status).toBe(200);
    expect(near((await decodeImage(second.body)).pixel(10, 10), GREEN)).toBe(true);
    expect(connectionsSeen).toHaveLength(2);
    expect(connectionsSeen[1]).not.toBe(connectionsSeen[0]);
  });
});

describe('web security', () => {
  it("keeps another origin's responses from a captured page's scripts", async () => {
    expect(near(await captureColour('/cross-origin', 800), GREEN)).toBe(true);
  });

  it('gives a page that is not cross-origin isolated no SharedArrayBuffer (no precise timer for Spectre reads)', async () => {
    // Red team: @sparticuz/chromium's defaults turn SharedArrayBuffer on for every page, and site isolation is off, so
    // a third-party frame had a precise timer to read the customer's page memory with.
    expect(near(await captureColour('/shared-memory', 0), GREEN)).toBe(true);
  });
});

describe("Chromium's environment", () => {
  it('holds no AWS variables in any Chromium process', async () => {
    // The credentials really are in our own environment, as in Lambda.
    expect(process.env.AWS_SECRET_ACCESS_KEY).toBe(FAKE_CREDENTIALS.AWS_SECRET_ACCESS_KEY);
    await captureColour('/read', 0);
    const pids = await chromiumDescendants();
    expect(pids.length).toBeGreaterThan(1);
    for (const pid of pids) {
      // May well be empty: the renderer passes Chromium only an allow-listed few variables.
      const env = await environmentOf(pid);
      expect(env.filter((entry) => entry.startsWith('AWS_'))).toEqual([]);
      expect(env.join('\n')).not.toContain(FAKE_CREDENTIALS.AWS_SECRET_ACCESS_KEY);
    }
  });
});
