import { beforeAll, describe, expect, it } from 'vitest';
import { captureWithCustomerHeader, type SiteRequests } from '../helpers/headerCapture';
import type { PageHandler } from '../helpers/pageServer';

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

let site: SiteRequests;

beforeAll(async () => {
  const answered: PageHandler = (_req, res) =>
    res
      .writeHead(204, {
        'Access-Control-Allow-Origin': '*',
        'Access-Control-Allow-Methods': 'DELETE, PUT',
        'Access-Control-Allow-Headers': 'X-Anything',
      })
      .end();
  site = await captureWithCustomerHeader((at) => ({
    third: {
      // A third-party frame (an ad, an embed) that asks the origin for something needing a preflight.
      '/frame': `<script>fetch('${at.site}/chosen-by-third-party', { method: 'DELETE', headers: { 'X-Anything': '1' } }).catch(() => {});</script>`,
    },
    site: {
      '/page': `<!doctype html><html><body><p>page</p><iframe src="${at.third}/frame"></iframe></body></html>`,
      '/chosen-by-third-party': answered,
    },
  }));
}, 120_000);

describe("the customer's headers", () => {
  it("never go with the preflight of a third-party frame's request to the origin", () => {
    const preflight = site.requests.find(({ method }) => method === 'OPTIONS');
    expect(preflight, site.requests.map(({ method, path }) => `${method} ${path}`).join()).toBeDefined();
    // Before: the OPTIONS carried the token.
    expect(preflight?.headers['x-customer-token']).toBeUndefined();
  });

  it("never go with the third-party frame's request itself", () => {
    for (const request of site.requests.filter(({ path }) => path === '/chosen-by-third-party')) {
      expect(request.headers['x-customer-token'], request.method).toBeUndefined();
    }
  });
});
