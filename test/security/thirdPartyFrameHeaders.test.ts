import { beforeAll, describe, expect, it } from 'vitest';
import {
  CUSTOMER_TOKEN,
  captureWithCustomerHeader,
  reached,
  type SiteRequests,
} from '../helpers/headerCapture';

/**
 * Red team (round 9, fixed): a third-party FRAME sends the customer's `headers` to an origin path of its choosing, with no
 * script and no redirect: its document refreshes itself there (`<meta http-equiv="refresh">`, or the `Refresh`
 * response header; in an <iframe> or an <object>).
 *
 * docs/security.md: `headers` go only to requests for the origin of `url` that the origin itself makes, "so ... a
 * third-party frame or script cannot make credentialed requests back to the origin with it"; its known limits are all
 * "within the customer's own top document". Round 8 closed the `302` path (requestHeaders.ts: a chain that left the
 * origin gets nothing), but a refresh is no redirect: it is a new navigation of the third party's frame, with an
 * empty redirect chain, and askedByOrigin takes it for the origin's own (today the token arrives at both paths).
 *
 * Why (seen with Puppeteer's request events): Chromium reports these loads with the initiator
 * `{ type: 'parser', url: <the customer's page>, columnNumber: <its <iframe> element> }`, the parent document that
 * declared the frame, while request.frame() is the third party's frame (frame.url() its third-party document);
 * askedByOrigin reads `initiator.url` first and never looks at the frame.
 *
 * Fix: shared/capture/requestHeaders.ts, askedByOrigin: a navigation of a frame other than the capture's own
 * navigation is the origin's only when the frame's current document (or the navigation's initiator) is the origin's;
 * a subframe whose document is another origin's asks for itself.
 */

let site: SiteRequests;

beforeAll(async () => {
  site = await captureWithCustomerHeader(
    (at) => ({
      third: {
        // A widget the customer's page frames, which sends the frame to a path of the origin it picks.
        '/meta-refresh': `<meta http-equiv="refresh" content="0;url=${at.site}/chosen/meta-refresh">`,
        '/refresh-header': (_req, res) =>
          res
            .writeHead(200, {
              'Content-Type': 'text/html',
              Refresh: `0;url=${at.site}/chosen/refresh-header`,
            })
            .end('<p>widget</p>'),
        // The same document in an <object> instead of an <iframe>.
        '/object-refresh': `<meta http-equiv="refresh" content="0;url=${at.site}/chosen/object-refresh">`,
      },
      site: {
        '/page': `<!doctype html><html><body>
          <iframe src="${at.third}/meta-refresh"></iframe>
          <iframe src="${at.third}/refresh-header"></iframe>
          <object data="${at.third}/object-refresh" type="text/html"></object>
          <iframe src="/own-frame"></iframe>
        </body></html>`,
        // The origin's own frame, and what its document loads: the customer's, as the page is.
        '/own-frame': '<img src="/own-frame-image">',
        '/own-frame-image': reached,
        '/chosen/meta-refresh': reached,
        '/chosen/refresh-header': reached,
        '/chosen/object-refresh': reached,
      },
    }),
    { delay: 1000 },
  );
}, 120_000);

describe("the customer's headers and a third-party frame's refresh", () => {
  it("go with the page itself, its own frame and that frame's own loads", () => {
    for (const path of ['/page', '/own-frame', '/own-frame-image'])
      expect(site.token(path), path).toBe(CUSTOMER_TOKEN);
  });

  it.each(['meta-refresh', 'refresh-header', 'object-refresh'])(
    'never go where a third-party frame refreshes itself to (%s)',
    (kind) => {
      const path = `/chosen/${kind}`;
      expect(site.reached(path), `${path} was requested`).toBe(true);
      // Before: the token arrived.
      expect(site.token(path), path).toBeUndefined();
    },
  );
});
