import type { IncomingHttpHeaders } from 'node:http';
import { type PageHandler, startPageServer } from './pageServer';
import { startScreenshotHarness } from './screenshotHarness';

/** The customer's header, as the header suites send it with a capture. */
export const CUSTOMER_TOKEN = 'only-for-the-origin';

/** Both origins, known once their servers listen: each side's pages may name the other. */
export interface Origins {
  site: string;
  third: string;
}

type Pages = Record<string, string | PageHandler>;

/** What the site received: every request, and for a path whether it was reached and the token its last one carried. */
export interface SiteRequests {
  requests: { method: string; path: string; headers: IncomingHttpHeaders }[];
  reached(path: string): boolean;
  token(path: string): string | undefined;
}

/** A plain answer for a path of the site that only needs to be reached (what reached it is recorded). */
export const reached: PageHandler = (_req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain' }).end('');
};

/**
 * Serves the customer's site (on 127.0.0.1) and a third party (on 127.0.0.2), both standing in for public hosts,
 * captures the site's `/page` through the screenshot route with `X-Customer-Token` as the customer's header, and
 * gives what the site received. The pages are made once both origins are known.
 */
export async function captureWithCustomerHeader(
  pages: (at: Origins) => { site: Pages; third: Pages },
  shot: Record<string, unknown> = {},
): Promise<SiteRequests> {
  const requests: { method: string; path: string; headers: IncomingHttpHeaders }[] = [];
  const at: Origins = { site: '', third: '' };
  const made = () => pages(at);
  // Each request is answered from the pages as made now, with both origins filled in.
  const serve =
    (side: 'site' | 'third', path: string): PageHandler =>
    (req, res) => {
      if (side === 'site') requests.push({ method: req.method ?? 'GET', path, headers: req.headers });
      const page = made()[side][path];
      if (typeof page === 'function') return page(req, res);
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
    };
  const routes = (side: 'site' | 'third') =>
    Object.fromEntries(Object.keys(made()[side]).map((path) => [path, serve(side, path)]));
  const third = await startPageServer(routes('third'), '127.0.0.2');
  const site = await startPageServer(routes('site'));
  at.site = site.origin;
  at.third = third.origin;
  const harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: `${site.hostPort},${third.hostPort}` });
  try {
    const { apiKey } = await harness.newAccount();
    const answer = await harness.shoot(apiKey, {
      url: `${site.origin}/page`,
      width: 320,
      height: 320,
      waitUntil: 'networkidle',
      headers: { 'X-Customer-Token': CUSTOMER_TOKEN },
      ...shot,
    });
    if (answer.status !== 200) throw new Error(`The capture failed: ${answer.body.toString('utf8')}`);
    return {
      requests,
      reached: (path) => requests.some((request) => request.path === path),
      token: (path) => {
        const value = requests.findLast((request) => request.path === path)?.headers['x-customer-token'];
        return Array.isArray(value) ? value[0] : value;
      },
    };
  } finally {
    await harness.close();
    await site.close();
    await third.close();
  }
}
