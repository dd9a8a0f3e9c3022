import { beforeAll, describe, expect, it } from 'vitest';
import {
  CUSTOMER_TOKEN,
  captureWithCustomerHeader,
  reached,
  type SiteRequests,
} from '../helpers/headerCapture';

/**
 * Red team (round 10), then a known limit: a third-party frame navigates itself to one of the origin's client-side
 * forwarders (a login page that follows `?next=` with `location.href`, a `<meta refresh>` built from the query). That
 * navigation gets no headers, but the page it lands on is an origin document under origin parents, so its forward,
 * the origin's own script, carried the customer's `headers` to the path the third party named, and so did that
 * document's own loads. A frame's document is now the origin's only when the navigation that brought it was
 * (shared/capture/requestHeaders.ts, `DocumentTrust`); the origin's own frame going through the same forwarder keeps
 * its headers. A forwarder that breaks out of frames (`top.location = next`) sends the top document, which Chromium
 * reports as the top document's own navigation with the origin's code on its stack: while a stranger's navigation
 * keeps an origin document in a frame, no origin stack counts (`strangerBroughtOriginDocument`).
 */

let site: SiteRequests;

/** An origin page that tells the top document it is in: the capture waits for every mark. */
const landed = (mark: string) =>
  `<p>${mark}</p><script>parent.document.body.dataset['${mark}'] = ''</script>`;

beforeAll(async () => {
  site = await captureWithCustomerHeader(
    (at) => ({
      third: {
        '/widget': `<script>location.href = '${at.site}/login-after-image?next=/secret'</script>`,
        '/widget-meta': `<script>location.href = '${at.site}/login-meta?next=/secret-meta'</script>`,
      },
      site: {
        // The strangers' frames come in once the origin's own frame has landed: while an origin document a stranger
        // brought is in the page, no origin stack counts, so on a loaded machine a stranger landing first would
        // take the own frame's headers too (as designed), and the last test would prove nothing.
        '/page': `<!doctype html><html><body>
          <iframe src="/login?next=/own-secret"></iframe>
          <script>
            window.strangers = () => {
              for (const path of ['/widget', '/widget-meta']) {
                const frame = document.createElement('iframe');
                frame.src = '${at.third}' + path;
                document.body.append(frame);
              }
            };
          </script>
        </body></html>`,
        '/login': (req, res) => {
          const next = new URL(req.url ?? '/', 'http://site').searchParams.get('next') ?? '/';
          res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<img src="/image-${next.slice(1)}">
              <script>location.href = new URLSearchParams(location.search).get('next')</script>`);
        },
        // The same forwarder, once its image was asked for (answered or not): on a loaded machine, a forward at once
        // could cancel the image before its request left, and the test would prove nothing.
        '/login-after-image': (req, res) => {
          const next = new URL(req.url ?? '/', 'http://site').searchParams.get('next') ?? '/';
          const forward = "location.href = new URLSearchParams(location.search).get('next')";
          res
            .writeHead(200, { 'Content-Type': 'text/html' })
            .end(`<img src="/image-${next.slice(1)}" onload="${forward}" onerror="${forward}">`);
        },
        '/login-meta': (req, res) => {
          const next = new URL(req.url ?? '/', 'http://site').searchParams.get('next') ?? '/';
          res
            .writeHead(200, { 'Content-Type': 'text/html' })
            .end(`<meta http-equiv="refresh" content="0;url=${next}">`);
        },
        '/image-secret': reached,
        '/image-own-secret': reached,
        '/secret': landed('secret'),
        '/secret-meta': landed('secretMeta'),
        '/own-secret': `${landed('ownSecret')}<script>parent.strangers()</script>`,
      },
    }),
    { width: 800, height: 600, waitForSelector: 'body[data-secret][data-secret-meta][data-own-secret]' },
  );
}, 120_000);

describe("the customer's headers and the origin's client-side forwarders", () => {
  it('go with the page', () => {
    expect(site.token('/page')).toBe(CUSTOMER_TOKEN);
  });

  it("do not go where a third party's frame had a forwarder send it", () => {
    expect(site.reached('/secret'), '/secret was requested').toBe(true);
    expect(site.token('/secret')).toBeUndefined();
    expect(site.reached('/secret-meta'), '/secret-meta was requested').toBe(true);
    expect(site.token('/secret-meta')).toBeUndefined();
  });

  it('do not go with the loads of the origin document such a frame landed on', () => {
    expect(site.reached('/image-secret'), '/image-secret was requested').toBe(true);
    expect(site.token('/image-secret')).toBeUndefined();
  });

  it('go where the origin sent its own frame through the same forwarder', () => {
    expect(site.token('/own-secret')).toBe(CUSTOMER_TOKEN);
    expect(site.token('/image-own-secret')).toBe(CUSTOMER_TOKEN);
  });
});

describe("the customer's headers and an origin forwarder that breaks out of frames", () => {
  let busted: SiteRequests;

  beforeAll(async () => {
    busted = await captureWithCustomerHeader(
      (at) => ({
        third: { '/widget': `<script>location.href = '${at.site}/login-bust?next=/secret-top'</script>` },
        site: {
          '/page': `<!doctype html><html><body><iframe src="${at.third}/widget"></iframe></body></html>`,
          '/login-bust': `<script>
            const next = new URLSearchParams(location.search).get('next');
            if (top !== self) top.location = next;
          </script>`,
          '/secret-top': '<p>secret</p><script>document.body.dataset.secretTop = ""</script>',
        },
      }),
      { width: 800, height: 600, waitForSelector: 'body[data-secret-top]' },
    );
  }, 120_000);

  it("do not go with the top document's navigation it asked for", () => {
    expect(busted.token('/page')).toBe(CUSTOMER_TOKEN);
    expect(busted.reached('/secret-top'), '/secret-top was requested').toBe(true);
    expect(busted.token('/secret-top')).toBeUndefined();
  });
});
