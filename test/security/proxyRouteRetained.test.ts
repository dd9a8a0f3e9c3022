import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumRenderer } from '../../shared/capture/chromiumRenderer';
import {
  type EgressProxy,
  type EgressRoute,
  egressChromiumArgs,
  startEgressProxy,
} from '../../shared/egress/egressProxy';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { collectGarbage } from '../helpers/heldBytes';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 4, capture routes): the renderer closes a capture's route "with the browser" through
 * `browser.once('disconnected', closeOwn)` and, when the capture ends, `browser.off('disconnected', closeOwn)`.
 * Puppeteer's `once` registers a wrapper of its own, so that `off` removes nothing: every capture leaves a listener
 * on the browser for the browser's whole life, holding its route, the route's server and the capture's verdicts
 * (up to 1,000 names, each with every address its name server answered). Measured: a page naming 1,000 hosts that
 * answer 200 addresses each left about 1.5 MiB of the renderer's heap behind per capture, for as long as the
 * browser lives (a warm Lambda renderer serves many accounts with one browser).
 *
 * The routes of finished captures must be released: after they are retired and garbage is collected, every one of
 * them is gone.
 */

let site: PageServer;
let proxy: EgressProxy;

beforeAll(async () => {
  site = await startPageServer({ '/': '<!doctype html><title>page</title><p>page</p>' });
  proxy = await startEgressProxy({
    allowPrivateHosts: '*',
    lookup: async () => [{ address: '127.0.0.1', family: 4 }],
  });
});

afterAll(async () => {
  await proxy?.close();
  await site?.close();
});

describe("a finished capture's route", () => {
  it('is not kept by the renderer once the capture is retired', async () => {
    const released = new Set<number>();
    const registry = new FinalizationRegistry<number>((id) => released.add(id));
    const opened: number[] = [];
    const renderer = new ChromiumRenderer({
      launchArgs: async () => egressChromiumArgs(proxy.url),
      contextProxy: async () => {
        const route: EgressRoute = await proxy.openRoute();
        const id = opened.length;
        opened.push(id);
        registry.register(route, id);
        return route;
      },
    });
    const captures = 4;
    try {
      await renderer.warmUp();
      for (let i = 0; i < captures; i++) {
        const spec = captureSpecOf(screenshotRequest.parse({ url: `http://page.test:${site.port}/` }));
        expect(
          (await renderer.capture(spec, { deadline: Date.now() + 60_000 })).image.length,
        ).toBeGreaterThan(0);
      }
      await renderer.settle();
      // The first `captures` routes served the captures; the one after them is the spare tab's, still in use.
      const finished = opened.slice(0, captures);
      for (let round = 0; round < 20 && !finished.every((id) => released.has(id)); round++) {
        collectGarbage();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(finished.filter((id) => !released.has(id))).toEqual([]);
    } finally {
      await renderer.close();
    }
  }, 120_000);
});
