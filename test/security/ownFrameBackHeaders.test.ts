import { beforeAll, describe, expect, it } from 'vitest';
import { CUSTOMER_TOKEN, captureWithCustomerHeader, type SiteRequests } from '../helpers/headerCapture';

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

let site: SiteRequests;

beforeAll(async () => {
  site = await captureWithCustomerHeader(
    (at) => ({
      // The partner's page says when it is in (its load event may come before the origin's script listens).
      third: { '/embed': `<p>partner</p><script>parent.postMessage('embed-ready', '*')</script>` },
      site: {
        '/page': `<!doctype html><html><body>
          <script src="/carousel.js"></script>
          <iframe id="panel" src="${at.third}/embed"></iframe>
        </body></html>`,
        '/carousel.js': (_req, res) =>
          res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(`
            addEventListener('message', (event) => {
              if (event.data !== 'embed-ready') return;
              const panel = document.getElementById('panel');
              // Once the origin's page is in: the capture waits for this mark.
              panel.addEventListener('load', () => document.body.setAttribute('data-panel-back', ''), { once: true });
              panel.src = '/own-panel';
            });
          `),
        '/own-panel': '<p>own</p>',
      },
    }),
    { waitForSelector: 'body[data-panel-back]' },
  );
}, 120_000);

describe("the customer's headers and the origin's own script navigating its frame", () => {
  it('go with the page', () => {
    expect(site.token('/page')).toBe(CUSTOMER_TOKEN);
  });

  it("go with the origin's navigation of its frame away from a third-party document", () => {
    expect(site.reached('/own-panel'), '/own-panel was requested').toBe(true);
    // Lost between cc3a38d and its fix.
    expect(site.token('/own-panel')).toBe(CUSTOMER_TOKEN);
  });
});
