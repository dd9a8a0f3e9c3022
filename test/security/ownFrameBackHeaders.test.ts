import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 10, fixed), a regression of round 9's fix (cc3a38d, shared/capture/requestHeaders.ts framesOnOrigin): a
 * frame's navigation other than its first is judged "from the document it replaces". So when the origin's OWN script
 * (its stack wholly on the origin) sends one of its frames from a third-party document back to a page of the origin
 * (a carousel or tab strip that showed a partner's embed, then the site's own panel; a consent frame replaced by the
 * site's content), the navigation is taken for the third party's and gets no `headers`, though nothing of the third
 * party asked for it. Before cc3a38d the origin's script stack made it the origin's, and it carried the token
 * (checked by hand with the previous requestHeaders.ts).
 *
 * Fix: shared/capture/requestHeaders.ts: a navigation whose initiator is a script stack wholly on the origin, in a
 * frame above the navigated one, is the origin's whatever document it replaces; only parser/other initiators (the
 * replaced document's own refresh) need the replaced document's origin.
 */

let site: PageServer;
let third: PageServer;
let harness: ScreenshotHarness;
const seen = new Map<string, IncomingHttpHeaders>();
const TOKEN = 'only-for-the-origin';

beforeAll(async () => {
  const at = { third: '' };
  third = await startPageServer(
    { '/embed': (_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>partner</p>') },
    '127.0.0.2',
  );
  site = await startPageServer({
    '/page': (req, res) => {
      seen.set('/page', req.headers);
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<!doctype html><html><body>
        <iframe id="panel" src="${at.third}/embed"></iframe>
        <script src="/carousel.js"></script>
      </body></html>`);
    },
    '/carousel.js': (_req, res) =>
      res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(`
        const panel = document.getElementById('panel');
        panel.addEventListener('load', () => { panel.src = '/own-panel'; }, { once: true });
      `),
    '/own-panel': (req: { headers: IncomingHttpHeaders }, res: ServerResponse) => {
      seen.set('/own-panel', req.headers);
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>own</p>');
    },
  });
  at.third = third.origin;
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: `${site.hostPort},${third.hostPort}` });
  const { apiKey } = await harness.newAccount();
  const answer = await harness.shoot(apiKey, {
    url: `${site.origin}/page`,
    width: 320,
    height: 320,
    waitUntil: 'networkidle',
    delay: 1000,
    headers: { 'X-Customer-Token': TOKEN },
  });
  expect(answer.status, answer.status === 200 ? '' : answer.body.toString('utf8')).toBe(200);
}, 120_000);

afterAll(async () => {
  await harness?.close();
  await site?.close();
  await third?.close();
});

describe("the customer's headers and the origin's own script navigating its frame", () => {
  it('go with the page', () => {
    expect(seen.get('/page')?.['x-customer-token']).toBe(TOKEN);
  });

  it("go with the origin's navigation of its frame away from a third-party document", () => {
    expect(seen.has('/own-panel'), '/own-panel was requested').toBe(true);
    // Today: no token (it had one before cc3a38d).
    expect(seen.get('/own-panel')?.['x-customer-token']).toBe(TOKEN);
  });
});
