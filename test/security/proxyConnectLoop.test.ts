import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EgressProxy, startEgressProxy } from '../../shared/egress/egressProxy';
import { startSilentListener } from '../helpers/silentListener';

/**
 * Red team: the egress proxy connected to a host's checked addresses one after the other (connectPinned), each given
 * connectTimeoutMs (10 s), with no bound on their number and no look at whether Chromium was still waiting. A page's own
 * name server answers one name with many public addresses that never answer a SYN (a 1232-byte EDNS answer holds
 * about 75, a TCP one thousands): every CONNECT to it keeps the proxy connecting for addresses x 10 s, minutes to
 * hours, long after Chromium gave up, the capture ended and the proxy closed. Each capture leaves its dozens of such
 * loops, one socket each, in a renderer shared by every account (Lambda: 1024 descriptors). Now at most four are
 * tried, and none once the client left or the proxy closed.
 *
 * Here: a silent listener (test/helpers/silentListener.ts);
 * the lookup answers it 20 times, with a 500 ms connect timeout.
 */
const ADDRESSES = 20;

let silent: Awaited<ReturnType<typeof startSilentListener>>;
let port: number;

function tcpSockets(): number {
  return process.getActiveResourcesInfo().filter((name) => name === 'TCPSocketWrap').length;
}

beforeAll(async () => {
  silent = await startSilentListener();
  port = silent.port;
});

afterAll(() => silent?.close());

describe('a host whose many addresses never answer', () => {
  it('is no longer connected to once the client has gone and the proxy closed', async () => {
    const proxy: EgressProxy = await startEgressProxy({
      allowPrivateHosts: '*',
      lookup: async () => Array.from({ length: ADDRESSES }, () => ({ address: '127.0.0.1', family: 4 })),
      connectTimeoutMs: 500,
    });
    const baseline = tcpSockets();
    const client = connect(Number(new URL(proxy.url).port), '127.0.0.1');
    client.on('error', () => {});
    client.write(`CONNECT blackhole.test:${port} HTTP/1.1\r\nHost: blackhole.test:${port}\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Chromium gives up (the capture ended), and the renderer closes its proxy.
    client.destroy();
    await proxy.close();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    // Still connecting: address 4 of 20, for another 8 s.
    expect(tcpSockets()).toBe(baseline);
  }, 30_000);
});
