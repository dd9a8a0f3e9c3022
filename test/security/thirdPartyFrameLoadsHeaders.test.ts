import { beforeAll, describe, expect, it } from 'vitest';
import {
  CUSTOMER_TOKEN,
  captureWithCustomerHeader,
  reached,
  type SiteRequests,
} from '../helpers/headerCapture';

/**
 * Red team (round 9): a third-party FRAME, with no script at all, has the customer's `headers` sent to an origin path
 * of its choosing: its document's response asks for a preload in a `Link: <<origin>/...>; rel=preload` header, a load
 * Chromium reports without the frame's document as initiator (the same URL in an <img> of that document gets
 * nothing, test/security/thirdPartyHeaders.test.ts `/from-frame-img`). Likewise, some of the time, a lazy image of
 * such a frame (`<img loading="lazy">`): of six widgets framed side by side, one or more carry the token in most runs.
 * docs/security.md: "a third-party frame or script cannot make credentialed requests back to the origin with it";
 * the known limits are all "within the customer's own top document" (elements a third-party SCRIPT adds there).
 * Here the customer's page only frames a widget. askedByOrigin (shared/capture/requestHeaders.ts) falls back to
 * `initiator.url || frame.url()` and takes these loads for the origin's.
 *
 * Why (seen with Puppeteer's request events): Chromium reports these loads with the initiator
 * `{ type: 'parser', url: <the customer's page>, columnNumber: <its <iframe> element> }`, the parent document that
 * declared the frame, while request.frame() is the third party's frame (frame.url() its third-party document);
 * askedByOrigin reads `initiator.url` first and never looks at the frame.
 *
 * Fix: shared/capture/requestHeaders.ts askedByOrigin: a request with no initiator URL and no stack is the origin's
 * only when the frame it belongs to (request.frame(), and each of its parents) holds an origin document; a request
 * whose frame is unknown gets none.
 */

let site: SiteRequests;
const KINDS = ['link-preload'] as const;
/** Widgets whose document is a lazy image of the origin (Chromium reports some of those loads without their frame). */
const LAZY = Array.from({ length: 6 }, (_, n) => `lazy-img-${n}`);

beforeAll(async () => {
  site = await captureWithCustomerHeader(
    (at) => ({
      third: {
        // A widget the customer's page frames: static HTML, no script.
        '/widget': (_req, res) =>
          res
            .writeHead(200, {
              'Content-Type': 'text/html',
              Link: `<${at.site}/chosen/link-preload>; rel=preload; as=image`,
            })
            .end('<p>widget</p>'),
        ...Object.fromEntries(
          LAZY.map((name) => [`/${name}`, `<img loading="lazy" src="${at.site}/chosen/${name}">`]),
        ),
      },
      site: {
        '/page': `<!doctype html><html><body><iframe src="${at.third}/widget"></iframe>${LAZY.map(
          (name) => `<iframe src="${at.third}/${name}"></iframe>`,
        ).join('')}</body></html>`,
        ...Object.fromEntries([...KINDS, ...LAZY].map((kind) => [`/chosen/${kind}`, reached])),
      },
    }),
    { width: 800, height: 600, delay: 1000 },
  );
}, 120_000);

describe("the customer's headers and a third-party frame without script", () => {
  it('go with the page itself', () => {
    expect(site.token('/page')).toBe(CUSTOMER_TOKEN);
  });

  it.each(KINDS)('never go with what a third-party frame loads from the origin (%s)', (kind) => {
    const path = `/chosen/${kind}`;
    expect(site.reached(path), `${path} was requested`).toBe(true);
    // Before: the token arrived.
    expect(site.token(path), path).toBeUndefined();
  });

  it('never go with the lazy images of third-party frames', () => {
    const carried = LAZY.filter((name) => site.token(`/chosen/${name}`) !== undefined);
    expect(LAZY.filter((name) => site.reached(`/chosen/${name}`)).length).toBeGreaterThan(0);
    // Today: some of them (which ones varies from run to run) arrive with the token.
    expect(carried).toEqual([]);
  });
});
