import { readdir, readFile, readlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumRenderer } from '../../shared/capture/chromiumRenderer';
import {
  type EgressProxy,
  egressChromiumArgs,
  MAX_PENDING_CONNECTS,
  startEgressProxy,
} from '../../shared/egress/egressProxy';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { startSilentListener } from '../helpers/silentListener';

/**
 * Red team (round 3): a page that fetches a few hundred https hosts whose addresses never answer had the proxy
 * connecting to all of them at once, and Chromium keeps its proxy connections going after the capture's browser
 * context closed, so they outlived the capture too: about 450 descriptors for 4 x 10 s, in a renderer that serves
 * the next accounts (deployed) or other captures (locally). Each capture's context now has a route of the proxy of
 * its own: at most MAX_PENDING_CONNECTS connects at once, all ended with the capture.
 * Silent upstream: test/helpers/silentListener.ts.
 */
let silent: Awaited<ReturnType<typeof startSilentListener>>;
let page: Server;
let pagePort: number;

function tcpSockets(): number {
  return process.getActiveResourcesInfo().filter((name) => name === 'TCPSocketWrap').length;
}

/**
 * This process's connects still waiting for the silent host's answer (SYN_SENT): the socket inodes of
 * /proc/net/tcp's rows that are open in this process. Another process's connects to a port number the silent
 * listener was given again after a test that ended (their SYNs retried for seconds) would otherwise count as the
 * proxy's.
 */
async function connectsTo(port: number): Promise<Set<string>> {
  const remote = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const rows = (await readFile('/proc/net/tcp', 'utf8')).split('\n').slice(1);
  const waiting = rows
    .map((row) => row.trim().split(/\s+/))
    .filter(([, , remoteAddress, state]) => remoteAddress?.endsWith(remote) && state === '02')
    .map((columns) => columns[9] ?? '');
  const own = new Set(
    (
      await Promise.all(
        (await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')),
      )
    )
      .map((target) => /^socket:\[(\d+)\]$/.exec(target)?.[1])
      .filter((inode) => inode !== undefined),
  );
  return new Set(waiting.filter((inode) => own.has(inode)));
}

/** How many of `now` are not among `before`. */
const added = (now: Set<string>, before: Set<string>) =>
  [...now].filter((inode) => !before.has(inode)).length;

beforeAll(async () => {
  silent = await startSilentListener();
  const html = `<script>for(let i=0;i<600;i++)fetch('https://s'+i+'.test:${silent.port}/').catch(()=>{})</script>`;
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
  it('are bounded while its capture runs, and end with it', async () => {
    // Every name is this machine here (the page's and the silent hosts'), four addresses each as connectPinned tries.
    const proxy: EgressProxy = await startEgressProxy({
      allowPrivateHosts: '*',
      lookup: async () => Array.from({ length: 4 }, () => ({ address: '127.0.0.1', family: 4 })),
    });
    const renderer = new ChromiumRenderer({
      launchArgs: async () => egressChromiumArgs(proxy.url),
      contextProxy: () => proxy.openRoute(),
    });
    try {
      await renderer.warmUp();
      const baseline = tcpSockets();
      // The silent listener's own filler connection waits too.
      const fillers = await connectsTo(silent.port);
      const spec = captureSpecOf(
        screenshotRequest.parse({ url: `http://page.test:${pagePort}/`, delay: 4_000 }),
      );
      const capture = renderer.capture(spec, { deadline: Date.now() + 60_000 });
      let most = 0;
      let sockets = 0;
      for (const started = Date.now(); Date.now() - started < 3_500; ) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        most = Math.max(most, added(await connectsTo(silent.port), fillers));
        sockets = Math.max(sockets, tcpSockets() - baseline);
      }
      expect((await capture).image.length).toBeGreaterThan(0);
      await renderer.settle();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      // The precondition: the page had Chromium asking the proxy for many silent hosts at once.
      expect(sockets).toBeGreaterThan(2 * MAX_PENDING_CONNECTS);
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(MAX_PENDING_CONNECTS);
      expect(added(await connectsTo(silent.port), fillers)).toBe(0);
      // The next tab's context is all that is left.
      expect(tcpSockets() - baseline).toBeLessThan(20);
    } finally {
      await renderer.close();
      await proxy.close();
    }
  }, 120_000);
});
