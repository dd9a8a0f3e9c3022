import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 10, fixed), a regression of round 9's fix (cc3a38d, shared/capture/requestHeaders.ts framesOnOrigin): the
 * customer's `headers` go to "the page's own documents, subresources and scripts" (docs/security.md). An `<iframe>`
 * with no `src` that the origin's own script fills (`document.write`, `innerHTML`: rich-text editors, ad slots,
 * print previews, widgets rendered in place) holds a document of the origin's own origin, at `about:blank`. Its
 * loads (an image, a style sheet, a nested frame of the origin) carried the headers before round 9, and no longer do:
 * framesOnOrigin takes the frame's URL for its origin, and `about:blank` has no http origin, so every load of such a
 * frame (and of any frame inside it) is judged a stranger's. A page whose images or style sheets need the customer's
 * header (the very use of `headers`: a staging site behind a token) is captured without them.
 *
 * Checked by hand: with requestHeaders.ts as it was before cc3a38d, all three paths below carried the token.
 *
 * Fix: shared/capture/requestHeaders.ts framesOnOrigin: judge an `about:blank` (or `about:srcdoc`) frame by the frame
 * above it (its document inherits its creator's origin), not only for its first navigation; or read the frame's
 * security origin (CDP `Page.getFrameTree` / `frame.securityOrigin`) instead of its URL.
 */

let site: PageServer;
let harness: ScreenshotHarness;
const seen = new Map<string, IncomingHttpHeaders>();
const TOKEN = 'only-for-the-origin';
const OWN = ['/editor/image', '/editor/style.css', '/editor/frame'];

beforeAll(async () => {
  const landed = (path: string) => (req: { headers: IncomingHttpHeaders }, res: ServerResponse) => {
    seen.set(path, req.headers);
    res.writeHead(200, { 'Content-Type': path.endsWith('.css') ? 'text/css' : 'text/html' }).end('');
  };
  site = await startPageServer({
    '/page': (req, res) => {
      seen.set('/page', req.headers);
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<!doctype html><html><body>
        <iframe id="editor"></iframe>
        <iframe id="preview"></iframe>
        <script>
          const editor = document.getElementById('editor').contentDocument;
          editor.open();
          editor.write('<link rel="stylesheet" href="/editor/style.css"><img src="/editor/image">');
          editor.close();
          document.getElementById('preview').contentDocument.body.innerHTML = '<iframe src="/editor/frame"></iframe>';
        </script>
      </body></html>`);
    },
    ...Object.fromEntries(OWN.map((path) => [path, landed(path)])),
  });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: site.hostPort });
  const { apiKey } = await harness.newAccount();
  const answer = await harness.shoot(apiKey, {
    url: `${site.origin}/page`,
    width: 320,
    height: 320,
    waitUntil: 'networkidle',
    headers: { 'X-Customer-Token': TOKEN },
  });
  expect(answer.status, answer.status === 200 ? '' : answer.body.toString('utf8')).toBe(200);
}, 120_000);

afterAll(async () => {
  await harness?.close();
  await site?.close();
});

describe("the customer's headers and a frame the origin's own script fills", () => {
  it('go with the page', () => {
    expect(seen.get('/page')?.['x-customer-token']).toBe(TOKEN);
  });

  it.each(OWN)("go with the origin's own load %s from its about:blank frame", (path) => {
    expect(seen.has(path), `${path} was requested`).toBe(true);
    // Today: no token (it had one before cc3a38d).
    expect(seen.get(path)?.['x-customer-token'], path).toBe(TOKEN);
  });
});
