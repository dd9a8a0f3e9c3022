import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { type EgressProxy, egressChromiumArgs, startEgressProxy } from '../../shared/egress/egressProxy';
import { startSilentListener } from '../helpers/silentListener';

/**
 * Red team (round 3): the proxy gives up connecting once Chromium's connection to it closes, but Chromium does not
 * close it when the capture's browser context closes: its pending CONNECTs (connect jobs) go on. One page that
 * fetches a few hundred https hosts whose addresses never answer leaves about 230 upstream connects and as many client
 * connections, two descriptors each, for 4 x 10 s after its capture ended; nothing bounds them per capture, so a few
 * captures in a row fill a Lambda renderer's 1024 descriptors and the next accounts' captures on it fail.
 * The renderer now has the proxy abandon what is pending once its captures are settled (abandonPending,
 * shared/capture/abandonAfterCaptures.ts). Silent upstream: test/helpers/silentListener.ts.
 */
let silent: Awaited<ReturnType<typeof startSilentListener>>;
let silentPort: number;
let page: Server;
let pagePort: number;

function tcpSockets(): number {
  return process.getActiveResourcesInfo().filter((name) => name === 'TCPSocketWrap').length;
}

beforeAll(async () => {
  silent = await startSilentListener();
  silentPort = silent.port;
  const html = `<script>for(let i=0;i<600;i++)fetch('https://s'+i+'.test:${silentPort}/').catch(()=>{})</script>`;
  page = createServer((socket) =>
    socket.once('data', () =>
      socket.end(`HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n${html}`),
    ),
  );
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  pagePort = (page.address() as { port: number }).port;
});

afterAll(() => {
  page?.close();
  silent?.close();
});

describe("a page's connections to silent hosts", () => {
  it('end with its capture', async () => {
    // Every name is this machine here (the page's and the silent hosts'), four addresses each as connectPinned tries.
    const proxy: EgressProxy = await startEgressProxy({
      allowPrivateHosts: '*',
      lookup: async () => Array.from({ length: 4 }, () => ({ address: '127.0.0.1', family: 4 })),
    });
    const baseline = tcpSockets();
    const { browser } = await launchChromium(egressChromiumArgs(proxy.url));
    try {
      const context = await browser.createBrowserContext();
      const tab = await context.newPage();
      await tab.goto(`http://page.test:${pagePort}/`);
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      const during = tcpSockets() - baseline;
      // The capture ends, and its leftovers are settled.
      await context.close();
      proxy.abandonPending();
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const after = tcpSockets() - baseline;
      // The precondition: the page had the proxy connecting to many silent hosts at once.
      expect(during).toBeGreaterThan(100);
      expect(after).toBeLessThan(20);
    } finally {
      await browser.close();
      await proxy.close();
    }
  }, 120_000);
});
