import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumRenderer } from '../../shared/capture/chromiumRenderer';
import { type EgressProxy, egressChromiumArgs, startEgressProxy } from '../../shared/egress/egressProxy';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { collectGarbage } from '../helpers/heldBytes';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 4, capture routes): a route keeps up to 1,000 verdicts for its capture's life, each with every
 * address its name was answered with, though a connection only ever tries the first four (MAX_ADDRESSES_TRIED). A
 * page's own name server answers each of its names with some 4,000 A records (one DNS answer over TCP holds that
 * many), and the page names hundreds of such hosts: measured, about 115 MiB of the renderer's heap for 1,000
 * names of 3,000 addresses, held until the capture ends (and, with the listener kept by the browser,
 * proxyRouteRetained.test.ts, for the browser's life). Before routes kept verdicts, each lived for one connection.
 *
 * What a capture's verdicts hold is bounded by what is used of them, not by what a page's name server answers.
 */

const NAMES = 600;
const ADDRESSES_PER_NAME = 4_000;
/** Far above what 600 names with four addresses each could take; far below what 600 x 4,000 addresses take. */
const MOST_HEAP_GROWTH_MIB = 40;

let site: PageServer;
let proxy: EgressProxy;
let answered = 0;

/** Heap in use after a full collection (MiB). */
async function heapUsedMib(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    collectGarbage();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** The page's name server: every name but the page's own has ADDRESSES_PER_NAME addresses (fresh strings each). */
async function lookup(hostname: string): Promise<LookupAddress[]> {
  if (hostname === 'page.test') return [{ address: '127.0.0.1', family: 4 }];
  answered++;
  const net = answered % 250;
  return Array.from({ length: ADDRESSES_PER_NAME }, (_, i) => ({
    address: `127.${net}.${i >> 8}.${i & 255}`,
    family: 4,
  }));
}

beforeAll(async () => {
  let port = 0;
  site = await startPageServer({
    '/': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(
        `<!doctype html><title>page</title><script>for (let i = 0; i < ${NAMES}; i++) fetch('https://h' + i + '.many.test:${port}/').catch(() => undefined)</script>`,
      );
    },
  });
  port = site.port;
  // '*': the page's hosts resolve to loopback here, so that nothing leaves the machine.
  proxy = await startEgressProxy({ allowPrivateHosts: '*', lookup });
});

afterAll(async () => {
  await proxy?.close();
  await site?.close();
});

describe("a capture's verdicts", () => {
  it("do not hold every address a page's name server answered", async () => {
    const renderer = new ChromiumRenderer({
      launchArgs: async () => egressChromiumArgs(proxy.url),
      contextProxy: () => proxy.openRoute(),
    });
    try {
      await renderer.warmUp();
      const before = await heapUsedMib();
      const spec = captureSpecOf(
        // Long enough for the page's names to be resolved while it runs, on a loaded machine too.
        screenshotRequest.parse({ url: `http://page.test:${site.port}/`, delay: 15_000 }),
      );
      const capture = renderer.capture(spec, { deadline: Date.now() + 60_000 });
      // Measured while the capture still runs: its route, and so its verdicts, are alive.
      for (const started = Date.now(); answered < NAMES && Date.now() - started < 14_000; ) {
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const during = await heapUsedMib();
      expect((await capture).image.length).toBeGreaterThan(0);
      // The precondition: the page had most of its names resolved through its route.
      expect(answered).toBeGreaterThan(NAMES / 2);
      expect(during - before).toBeLessThan(MOST_HEAP_GROWTH_MIB);
    } finally {
      await renderer.close();
    }
  }, 120_000);
});
