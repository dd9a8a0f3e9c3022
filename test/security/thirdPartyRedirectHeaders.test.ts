import { beforeAll, describe, expect, it } from 'vitest';
import {
  CUSTOMER_TOKEN,
  captureWithCustomerHeader,
  reached,
  type SiteRequests,
} from '../helpers/headerCapture';
import type { PageHandler } from '../helpers/pageServer';

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

let site: SiteRequests;
const KINDS = ['img', 'css', 'script', 'frame', 'fetch'] as const;

beforeAll(async () => {
  site = await captureWithCustomerHeader((at) => ({
    // The third party answers every request of the page with a redirect to a path of the origin of its choosing.
    third: Object.fromEntries(
      KINDS.map((kind): [string, PageHandler] => [
        `/${kind}`,
        (_req, res) => res.writeHead(302, { Location: `${at.site}/chosen-by-third-party/${kind}` }).end(),
      ]),
    ),
    site: {
      '/page': `<!doctype html><html><head>
        <link rel="stylesheet" href="${at.third}/css">
        <script src="${at.third}/script"></script>
      </head><body>
        <img src="${at.third}/img">
        <iframe src="${at.third}/frame"></iframe>
        <script>fetch('${at.third}/fetch', { mode: 'no-cors' }).catch(() => {})</script>
      </body></html>`,
      ...Object.fromEntries(KINDS.map((kind) => [`/chosen-by-third-party/${kind}`, reached])),
    },
  }));
}, 120_000);

describe("the customer's headers", () => {
  it('go with the page itself', () => {
    expect(site.token('/page')).toBe(CUSTOMER_TOKEN);
  });

  it.each(KINDS)('never go where a third party redirects a request of the page (%s)', (kind) => {
    const path = `/chosen-by-third-party/${kind}`;
    expect(site.reached(path), `${path} was requested`).toBe(true);
    // Today: the token arrives for every kind.
    expect(site.token(path), path).toBeUndefined();
  });
});
