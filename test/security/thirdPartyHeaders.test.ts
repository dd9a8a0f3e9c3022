import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * The customer's `headers` go to the origin of `url` only when the origin itself asks: its documents, subresources
 * and scripts. A frame or a script of another origin calling back to the origin gets nothing of them. The second
 * origin is another loopback address the test serves; through the real handler and real Chromium.
 */

let site: PageServer;
let third: PageServer;
let harness: ScreenshotHarness;
let apiKey: string;
/** The headers the site saw, by path. */
const seen = new Map<string, IncomingHttpHeaders>();
const TOKEN = 'only-for-the-origin';

const html = (body: string) => (_req: unknown, res: import('node:http').ServerResponse) =>
  res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<!doctype html><html><body>${body}</body></html>`);

beforeAll(async () => {
  // Filled in once both servers listen: each page names the other's port.
  const at = { site: '', third: '' };
  const recorded =
    (path: string) => (req: { headers: IncomingHttpHeaders }, res: import('node:http').ServerResponse) => {
      seen.set(path, req.headers);
      res.writeHead(200, { 'Content-Type': path.endsWith('.css') ? 'text/css' : 'text/plain' }).end('');
    };
  third = await startPageServer(
    {
      '/widget': (req, res) =>
        html(`<img src="${at.site}/from-frame-img">
          <script>fetch('${at.site}/from-frame-fetch', { mode: 'no-cors' })</script>
          <iframe src="${at.site}/nested"></iframe>`)(req, res),
      '/third.js': (_req, res) =>
        res
          .writeHead(200, { 'Content-Type': 'text/javascript' })
          .end(`fetch('${at.site}/from-third-script', { mode: 'no-cors' });
            setTimeout(() => {
              const xhr = new XMLHttpRequest();
              xhr.open('GET', '${at.site}/from-third-script-later');
              xhr.send();
            }, 0);
            // Ways to look like the origin's own code: its function called, text named after its file, a blob: script.
            window.firstPartyFetch('/third-calls-origin-function');
            eval("fetch('/third-eval-named-as-origin')\\n//# sourceURL=${at.site}/own.js");
            new Function("fetch('/third-new-function')")();
            const blob = new Blob(["fetch('${at.site}/third-blob-script')"], { type: 'text/javascript' });
            const script = document.createElement('script');
            script.src = URL.createObjectURL(blob);
            document.head.append(script);
            // The browser's own functions handed to it to call later: no script frame on the stack (red team, round 21).
            setTimeout(fetch, 0, '${at.site}/third-native-timer');
            Promise.resolve(new Request('${at.site}/third-native-promise', { method: 'POST', body: 'x' })).then(fetch);
            setTimeout(navigator.sendBeacon.bind(navigator), 0, '${at.site}/third-native-beacon', 'x');`),
    },
    '127.0.0.2',
  );
  site = await startPageServer({
    '/page': (req, res) => {
      seen.set('/page', req.headers);
      html(`<link rel="stylesheet" href="/own.css">
        <script src="/own.js"></script>
        <script src="${at.third}/third.js"></script>
        <script>fetch('/own-fetch')</script>
        <iframe src="${at.third}/widget"></iframe>`)(req, res);
    },
    '/own.css': recorded('/own.css'),
    '/own.js': (_req, res) =>
      res
        .writeHead(200, { 'Content-Type': 'text/javascript' })
        .end(`window.firstPartyFetch = (path) => fetch(path); firstPartyFetch('/own-script-fetch');`),
    '/own-script-fetch': recorded('/own-script-fetch'),
    '/third-calls-origin-function': recorded('/third-calls-origin-function'),
    '/third-eval-named-as-origin': recorded('/third-eval-named-as-origin'),
    '/third-new-function': recorded('/third-new-function'),
    '/third-blob-script': recorded('/third-blob-script'),
    '/own-fetch': recorded('/own-fetch'),
    '/from-frame-img': recorded('/from-frame-img'),
    '/from-frame-fetch': recorded('/from-frame-fetch'),
    '/nested': recorded('/nested'),
    '/from-third-script': recorded('/from-third-script'),
    '/from-third-script-later': recorded('/from-third-script-later'),
    '/third-native-timer': recorded('/third-native-timer'),
    '/third-native-promise': recorded('/third-native-promise'),
    '/third-native-beacon': recorded('/third-native-beacon'),
  });
  at.site = site.origin;
  at.third = third.origin;
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: `${site.hostPort},${third.hostPort}` });
  ({ apiKey } = await harness.newAccount());
  const answer = await harness.shoot(apiKey, {
    url: `${site.origin}/page`,
    width: 320,
    height: 320,
    waitUntil: 'networkidle',
    headers: { 'X-Customer-Token': TOKEN },
  });
  // The answer's own words when it is not the image (a CI run once saw a 500 here; its reason says which part failed).
  expect(answer.status, answer.status === 200 ? '' : JSON.stringify(answer.json())).toBe(200);
});

afterAll(async () => {
  await harness?.close();
  await site?.close();
  await third?.close();
});

describe("the customer's headers", () => {
  it('go with the top document, its own subresources and its own scripts’ requests', () => {
    for (const path of ['/page', '/own.css', '/own-fetch', '/own-script-fetch']) {
      expect(seen.get(path)?.['x-customer-token'], path).toBe(TOKEN);
    }
  });

  it("never go with what another origin's frame asks of the origin: images, fetches, frames", () => {
    for (const path of ['/from-frame-img', '/from-frame-fetch', '/nested']) {
      expect(seen.has(path), path).toBe(true);
      expect(seen.get(path)?.['x-customer-token'], path).toBeUndefined();
    }
  });

  // Chromium reports an element's load (an image a script creates) as the document's own, so for those the script's
  // origin is not known: docs/api.md says so. Its fetch and XMLHttpRequest calls carry the script's stack.
  it("never go with the fetch and XMLHttpRequest calls of another origin's script in the top document", () => {
    for (const path of ['/from-third-script', '/from-third-script-later']) {
      expect(seen.has(path), path).toBe(true);
      expect(seen.get(path)?.['x-customer-token'], path).toBeUndefined();
    }
  });

  it("never go with another origin's script disguised as the origin's: its functions, eval named after its file, new Function, a blob: script", () => {
    for (const path of [
      '/third-calls-origin-function',
      '/third-eval-named-as-origin',
      '/third-new-function',
      '/third-blob-script',
    ]) {
      expect(seen.has(path), path).toBe(true);
      expect(seen.get(path)?.['x-customer-token'], path).toBeUndefined();
    }
  });

  it("never go with a request another origin's script leaves the browser to make, with no script on its stack", () => {
    // Red team (round 21): `setTimeout(fetch, 0, url)` and `.then(fetch)` are the browser's own functions called
    // later: no stack, so the request was judged by its document's URL, the origin's, and got the headers.
    for (const path of ['/third-native-timer', '/third-native-promise', '/third-native-beacon']) {
      expect(seen.has(path), path).toBe(true);
      expect(seen.get(path)?.['x-customer-token'], path).toBeUndefined();
    }
  });
});
