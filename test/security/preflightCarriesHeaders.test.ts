import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 8): a third-party frame of the customer's page gets the customer's `headers` sent to any path of
 * the origin it chooses, on the CORS preflight (OPTIONS) of a request it makes there.
 *
 * docs/security.md: "a third-party frame or script cannot make credentialed requests back to the origin with [the
 * customer's headers]", proved for its images, fetches and frames (test/security/thirdPartyHeaders.test.ts). But a
 * fetch that needs a preflight (a method other than GET/HEAD/POST, or a header of its own) makes Chromium send an
 * OPTIONS request first, and DevTools reports that request's initiator as `{ type: 'preflight', url: <the URL being
 * preflighted> }`: requestHeaders.ts (`askedByOrigin`) reads `initiator.url`, finds the origin, and adds the
 * customer's headers. So any third-party frame (an ad, an embed, a widget) sends the customer's `Authorization`,
 * API token or session header to `OPTIONS <origin>/<any path>`: the credential leaves the page's own requests, and a
 * server that acts on OPTIONS, or logs its headers, gets it at a path a stranger chose.
 *
 * Fix: shared/capture/requestHeaders.ts: judge a preflight by the request it precedes (its `requestId`: the headers
 * go only if that request got them), or never add them to a preflight (`initiator.type === 'preflight'`).
 */

let site: PageServer;
let third: PageServer;
let harness: ScreenshotHarness;
const TOKEN = 'only-for-the-origin';
/** What the site received: method, path and the token, if any. */
const seen: { method: string; path: string; token: string | undefined }[] = [];

beforeAll(async () => {
  // Filled in once both servers listen: each names the other's port.
  const at = { site: '', third: '' };
  const record = (req: IncomingMessage, res: ServerResponse) => {
    const token = req.headers['x-customer-token'];
    seen.push({
      method: req.method ?? '',
      path: req.url ?? '',
      token: Array.isArray(token) ? token[0] : token,
    });
    res
      .writeHead(204, {
        'Access-Control-Allow-Origin': '*',
        'Access-Control-Allow-Methods': 'DELETE, PUT',
        'Access-Control-Allow-Headers': 'X-Anything',
      })
      .end();
  };
  third = await startPageServer(
    {
      // A third-party frame (an ad, an embed) that asks the origin for something needing a preflight.
      '/frame': (_req, res) =>
        res
          .writeHead(200, { 'Content-Type': 'text/html' })
          .end(
            `<script>fetch('${at.site}/chosen-by-third-party', { method: 'DELETE', headers: { 'X-Anything': '1' } }).catch(() => {});</script>`,
          ),
    },
    '127.0.0.2',
  );
  site = await startPageServer({
    '/page': (_req, res) =>
      res
        .writeHead(200, { 'Content-Type': 'text/html' })
        .end(`<!doctype html><html><body><p>page</p><iframe src="${at.third}/frame"></iframe></body></html>`),
    '/chosen-by-third-party': record,
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
  it("never go with the preflight of a third-party frame's request to the origin", () => {
    const preflight = seen.find(({ method }) => method === 'OPTIONS');
    expect(preflight, JSON.stringify(seen)).toBeDefined();
    // Today: { method: 'OPTIONS', path: '/chosen-by-third-party', token: 'only-for-the-origin' }.
    expect(preflight?.token, JSON.stringify(seen)).toBeUndefined();
  });

  it("never go with the third-party frame's request itself", () => {
    for (const request of seen.filter(({ method }) => method !== 'OPTIONS')) {
      expect(request.token, JSON.stringify(request)).toBeUndefined();
    }
  });
});
