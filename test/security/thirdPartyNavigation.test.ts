import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * The customer's `headers` and the navigations of the top document: the one the capture starts (and its redirects) and
 * those the origin's own scripts start carry them; one that another origin's script in the page starts is that
 * script's request, and carries none. (A form such a script adds and submits is reported by Chromium with no stack,
 * as an element it adds: docs/security.md names that limit.) Through the real handler and real Chromium; the second
 * origin is another loopback address the test serves.
 */

let site: PageServer;
let third: PageServer;
let harness: ScreenshotHarness;
let apiKey: string;
/** The headers the site saw, by path. */
const seen = new Map<string, IncomingHttpHeaders>();
const TOKEN = 'only-for-the-origin';

const html = (body: string) => (res: ServerResponse) =>
  res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<!doctype html><html><body>${body}</body></html>`);
const script = (text: string) => (_req: unknown, res: ServerResponse) =>
  res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(text);
const recorded = (path: string) => (req: { headers: IncomingHttpHeaders }, res: ServerResponse) => {
  seen.set(path, req.headers);
  html('<p>landed</p>')(res);
};

beforeAll(async () => {
  // A relative address is the document's: the origin's.
  third = await startPageServer({ '/goes.js': script(`location.href = '/third-navigates';`) }, '127.0.0.2');
  site = await startPageServer({
    '/start': (_req, res) => res.writeHead(302, { Location: '/own-page' }).end(),
    '/own-page': (req, res) => {
      seen.set('/own-page', req.headers);
      html(`<script src="/own.js"></script>`)(res);
    },
    '/own.js': script(`location.href = '/own-navigates';`),
    '/own-navigates': recorded('/own-navigates'),
    '/third-get': (_req, res) => html(`<script src="${third.origin}/goes.js"></script>`)(res),
    '/third-navigates': recorded('/third-navigates'),
  });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: `${site.hostPort},${third.hostPort}` });
  ({ apiKey } = await harness.newAccount());
});

afterAll(async () => {
  await harness?.close();
  await site?.close();
  await third?.close();
});

async function capture(path: string): Promise<void> {
  const answer = await harness.shoot(apiKey, {
    url: `${site.origin}${path}`,
    width: 320,
    height: 320,
    delay: 500,
    headers: { 'X-Customer-Token': TOKEN },
  });
  expect(answer.status, answer.status === 200 ? '' : JSON.stringify(answer.json())).toBe(200);
}

describe("the customer's headers on navigations of the top document", () => {
  it('go with the capture’s own navigation, its redirect, and a navigation the origin’s script starts', async () => {
    await capture('/start');
    for (const path of ['/own-page', '/own-navigates']) {
      expect(seen.get(path)?.['x-customer-token'], path).toBe(TOKEN);
    }
  });

  it("never go with a navigation that another origin's script in the page starts", async () => {
    await capture('/third-get');
    expect(seen.has('/third-navigates')).toBe(true);
    expect(seen.get('/third-navigates')?.['x-customer-token']).toBeUndefined();
  });
});
