import { beforeAll, describe, expect, it } from 'vitest';
import {
  CUSTOMER_TOKEN,
  captureWithCustomerHeader,
  reached,
  type SiteRequests,
} from '../helpers/headerCapture';
import type { PageHandler } from '../helpers/pageServer';

/**
 * Red team 12a, a regression of today's DocumentTrust (shared/capture/requestHeaders.ts): a frame's trust is written
 * when a navigation of the frame *starts* (`capture.trust.set(frame, asked)` in the 'request' handler), not when its
 * document is replaced. A navigation that never replaces the document (answered 204 or 205, a download with
 * `Content-Disposition: attachment`, one still pending, one cancelled by the next) leaves the frame's old document,
 * the origin's own, marked as a stranger's:
 * - an origin frame that starts a navigation to a third party makes `strangerBroughtOriginDocument` true for the rest
 *   of the capture, so every request the origin's top document makes from script (an SPA's API calls) loses the
 *   customer's headers;
 * - the top document starting one (an "export" link to a CDN, a tracking redirect answered 204) makes the top frame
 *   untrusted, so all its loads lose them too.
 * Marks, not sleeps: the page asks for /api only once the site has seen the third party receive the navigation.
 *
 * Fix: record a frame's trust when its document commits (puppeteer's `framenavigated`, keyed by the navigation's
 * loader/request), keeping the trust of the document it still holds while a navigation is pending or was dropped.
 *
 * Fixed: shared/capture/requestHeaders.ts records the verdict of each navigation as pending and makes it the
 * document's trust when puppeteer reports the frame navigated to that address.
 */

let frameCase: SiteRequests;
let topCase: SiteRequests;

function deferred() {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Answered once the third party has received the navigation: by then the renderer let it through. */
const after =
  (seen: { promise: Promise<void> }): PageHandler =>
  (_req, res) => {
    void seen.promise.then(() => res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok'));
  };

/** A third-party path that answers 204 (no document) and tells `seen` it was asked. */
const noContent =
  (seen: { resolve(): void }): PageHandler =>
  (_req, res) => {
    seen.resolve();
    res.writeHead(204).end();
  };

const SHOT = { width: 320, height: 320, waitUntil: 'load', waitForSelector: 'body[data-done]' };

beforeAll(async () => {
  const thirdGotIt = deferred();
  frameCase = await captureWithCustomerHeader(
    (at) => ({
      third: { '/nocontent': noContent(thirdGotIt) },
      site: {
        '/page': `<!doctype html><html><body>
          <iframe src="/frame"></iframe>
          <script>
            addEventListener('message', async (event) => {
              if (event.data !== 'frame-left') return;
              await fetch('/after-navigation');
              await fetch('/api');
              document.body.dataset.done = '';
            });
          </script>
        </body></html>`,
        '/frame': `<script>
          location.href = '${at.third}/nocontent';
          parent.postMessage('frame-left', '*');
        </script>`,
        '/after-navigation': after(thirdGotIt),
        '/api': reached,
      },
    }),
    SHOT,
  );
}, 120_000);

beforeAll(async () => {
  const thirdGotIt = deferred();
  topCase = await captureWithCustomerHeader(
    (at) => ({
      third: { '/export': noContent(thirdGotIt) },
      site: {
        '/page': `<!doctype html><html><body><p>export</p>
          <script>
            (async () => {
              location.href = '${at.third}/export';
              await fetch('/after-navigation');
              await fetch('/api');
              const image = new Image();
              image.src = '/image';
              await image.decode().catch(() => undefined);
              document.body.dataset.done = '';
            })();
          </script>
        </body></html>`,
        '/after-navigation': after(thirdGotIt),
        '/api': reached,
        '/image': reached,
      },
    }),
    SHOT,
  );
}, 120_000);

describe("the customer's headers after an origin frame's navigation to a third party answered 204", () => {
  it('go with the page and the frame', () => {
    expect(frameCase.token('/page')).toBe(CUSTOMER_TOKEN);
    expect(frameCase.token('/frame')).toBe(CUSTOMER_TOKEN);
  });

  it("go with the top document's own API call made after it", () => {
    expect(frameCase.reached('/api'), '/api was requested').toBe(true);
    expect(frameCase.token('/api')).toBe(CUSTOMER_TOKEN);
  });
});

describe("the customer's headers after the top document's own navigation to a third party answered 204", () => {
  it('go with the page', () => {
    expect(topCase.token('/page')).toBe(CUSTOMER_TOKEN);
  });

  it("go with the top document's own API call and image made after it", () => {
    expect(topCase.reached('/api'), '/api was requested').toBe(true);
    expect(topCase.token('/api')).toBe(CUSTOMER_TOKEN);
    expect(topCase.reached('/image'), '/image was requested').toBe(true);
    expect(topCase.token('/image')).toBe(CUSTOMER_TOKEN);
  });
});
