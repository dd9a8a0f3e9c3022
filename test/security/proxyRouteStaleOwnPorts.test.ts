import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumRenderer } from '../../shared/capture/chromiumRenderer';
import { type EgressProxy, egressChromiumArgs, startEgressProxy } from '../../shared/egress/egressProxy';
import { ownPorts } from '../../shared/egress/ownPorts';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { type PageServer, startPageServer, unusedPort } from '../helpers/pageServer';

/**
 * Red team (round 4, capture routes): a route keeps the gate's whole verdict for the capture's life, and the
 * verdict includes the own-ports check. A page asks once for a loopback port where nothing of the service listens
 * yet (allowed under ALLOW_PRIVATE_HOSTS=*, the connection is simply refused); the service starts listening there
 * during the capture (another capture's route, opened for each capture or spare tab: ephemeral loopback ports);
 * the page asks again and is let through to the service's own port on the stale verdict. Before routes kept
 * verdicts, every connection was checked against the registry as it stood.
 *
 * A port of the service is refused whenever it is asked for, whatever an earlier verdict of the capture said.
 */
let site: PageServer;
let proxy: EgressProxy;
let late: Server | undefined;
let lateConnections = 0;
let leaveOwnPorts: (() => void) | undefined;

beforeAll(async () => {
  const port = await unusedPort();
  const target = `http://127.0.0.1:${port}`;
  site = await startPageServer({
    '/': `<!doctype html><title>page</title><script>
      fetch('${target}/before', { mode: 'no-cors' }).catch(() => undefined)
        .then(() => fetch('/listening'))
        .then(() => fetch('${target}/after', { mode: 'no-cors' }))
        .then(() => document.title = 'reached', () => document.title = 'refused');
    </script>`,
    // The service starts listening on the port the page asked for, as one of its own, then the page asks again.
    '/listening': (_, res) => {
      late = createServer((socket) => {
        lateConnections++;
        socket.destroy();
      }).listen(port, '127.0.0.1');
      once(late, 'listening').then(() => {
        leaveOwnPorts = ownPorts.add(port);
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('listening');
      });
    },
  });
  proxy = await startEgressProxy({
    allowPrivateHosts: '*',
    lookup: async () => [{ address: '127.0.0.1', family: 4 }],
  });
});

afterAll(async () => {
  leaveOwnPorts?.();
  late?.close();
  await proxy?.close();
  await site?.close();
});

describe("a capture's verdicts", () => {
  it('never let a page through to a port that became one of the service’s during the capture', async () => {
    const renderer = new ChromiumRenderer({
      launchArgs: async () => egressChromiumArgs(proxy.url),
      contextProxy: () => proxy.openRoute(),
    });
    try {
      const spec = captureSpecOf(
        screenshotRequest.parse({ url: `http://page.test:${site.port}/`, delay: 3_000 }),
      );
      expect((await renderer.capture(spec, { deadline: Date.now() + 60_000 })).image.length).toBeGreaterThan(
        0,
      );
      // The precondition: the page did ask for the port again once the service listened there.
      expect(site.hits).toContain('/listening');
      expect(lateConnections).toBe(0);
    } finally {
      await renderer.close();
    }
  }, 120_000);
});
