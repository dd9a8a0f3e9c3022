import { beforeAll, describe, expect, it } from 'vitest';
import {
  CUSTOMER_TOKEN,
  captureWithCustomerHeader,
  reached,
  type SiteRequests,
} from '../helpers/headerCapture';

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

let site: SiteRequests;
const OWN = ['/editor/image', '/editor/style.css', '/editor/frame'];

beforeAll(async () => {
  site = await captureWithCustomerHeader(() => ({
    third: {},
    site: {
      '/page': `<!doctype html><html><body>
        <iframe id="editor"></iframe>
        <iframe id="preview"></iframe>
        <script>
          const editor = document.getElementById('editor').contentDocument;
          editor.open();
          editor.write('<link rel="stylesheet" href="/editor/style.css"><img src="/editor/image">');
          editor.close();
          document.getElementById('preview').contentDocument.body.innerHTML = '<iframe src="/editor/frame"></iframe>';
        </script>
      </body></html>`,
      ...Object.fromEntries(OWN.map((path) => [path, reached])),
    },
  }));
}, 120_000);

describe("the customer's headers and a frame the origin's own script fills", () => {
  it('go with the page', () => {
    expect(site.token('/page')).toBe(CUSTOMER_TOKEN);
  });

  it.each(OWN)("go with the origin's own load %s from its about:blank frame", (path) => {
    expect(site.reached(path), `${path} was requested`).toBe(true);
    // Today: no token (it had one before cc3a38d).
    expect(site.token(path), path).toBe(CUSTOMER_TOKEN);
  });
});
