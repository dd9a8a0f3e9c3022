import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 8): a third party whose resource the customer's page loads can send the customer's `headers` to
 * any address of the origin it chooses, by answering with a redirect.
 *
 * docs/security.md: `headers` go only to requests for the origin of `url` "that the origin itself makes", "so a
 * credential meant for the customer's site never reaches a third-party subresource or a redirect target, and a
 * third-party frame or script cannot make credentialed requests back to the origin with it". requestHeaders.ts
 * judges each request by its URL's origin and its initiator. A redirect hop is a new request with the SAME
 * initiator as the request that was redirected: when the origin's document (or its own script) asks a third party
 * for something (an image, a style sheet, a script, a frame, a fetch) and the third party answers `302 Location:
 * <origin>/<any path>`, the hop is for the origin and "asked by the origin", so it carries the customer's
 * `Authorization`, API token or whatever the capture was given. The third party picks the path: a credentialed GET
 * to `/logout`, `/api/...?delete=...`, an export, with a credential the customer meant only for the page itself; a
 * third-party frame so redirected loads an origin document with the credential, whose own subresources get it too.
 * (The cookies a browser would send there are the browser's rules; the headers are the service's.)
 *
 * Fix: shared/capture/requestHeaders.ts: judge a redirect hop by its whole chain: add the headers only when every
 * request of `request.redirectChain()` was for the origin (the capture's own navigation included: a chain that left
 * the origin and came back has been steered by someone else).
 */

let site: PageServer;
let third: PageServer;
let harness: ScreenshotHarness;
/** The headers the site saw, by path. */
const seen = new Map<string, IncomingHttpHeaders>();
const TOKEN = 'only-for-the-origin';
const KINDS = ['img', 'css', 'script', 'frame', 'fetch'] as const;

beforeAll(async () => {
  // Filled in once both servers listen: each names the other's port.
  const at = { site: '', third: '' };
  const landed = (path: string) => (req: { headers: IncomingHttpHeaders }, res: ServerResponse) => {
    seen.set(path, req.headers);
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end('');
  };
  // The third party answers every request of the page with a redirect to a path of the origin of its choosing.
  const bounce = (kind: string) => (_req: unknown, res: ServerResponse) =>
    res.writeHead(302, { Location: `${at.site}/chosen-by-third-party/${kind}` }).end();
  third = await startPageServer(
    Object.fromEntries(KINDS.map((kind) => [`/${kind}`, bounce(kind)])),
    '127.0.0.2',
  );
  site = await startPageServer({
    '/page': (req, res) => {
      seen.set('/page', req.headers);
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<!doctype html><html><head>
        <link rel="stylesheet" href="${at.third}/css">
        <script src="${at.third}/script"></script>
      </head><body>
        <img src="${at.third}/img">
        <iframe src="${at.third}/frame"></iframe>
        <script>fetch('${at.third}/fetch', { mode: 'no-cors' }).catch(() => {})</script>
      </body></html>`);
    },
    ...Object.fromEntries(
      KINDS.map((kind) => [`/chosen-by-third-party/${kind}`, landed(`/chosen-by-third-party/${kind}`)]),
    ),
  });
  at.site = site.origin;
  at.third = third.origin;
  // Both loopback servers stand in for public hosts; nothing here depends on private addresses.
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: `${site.hostPort},${third.hostPort}` });
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
  await third?.close();
});

describe("the customer's headers", () => {
  it('go with the page itself', () => {
    expect(seen.get('/page')?.['x-customer-token']).toBe(TOKEN);
  });

  it.each(KINDS)('never go where a third party redirects a request of the page (%s)', (kind) => {
    const path = `/chosen-by-third-party/${kind}`;
    expect(seen.has(path), `${path} was requested`).toBe(true);
    // Today: the token arrives for every kind.
    expect(seen.get(path)?.['x-customer-token'], path).toBeUndefined();
  });
});
