import { type ChildProcess, spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EgressProxy, startEgressProxy } from '../../shared/egress/egressProxy';

/**
 * Red team: the egress proxy connected to a host's checked addresses one after the other (connectPinned), each given
 * connectTimeoutMs (10 s), with no bound on their number and no look at whether Chromium was still waiting. A page's own
 * name server answers one name with many public addresses that never answer a SYN (a 1232-byte EDNS answer holds
 * about 75, a TCP one thousands): every CONNECT to it keeps the proxy connecting for addresses x 10 s, minutes to
 * hours, long after Chromium gave up, the capture ended and the proxy closed. Each capture leaves its dozens of such
 * loops, one socket each, in a renderer shared by every account (Lambda: 1024 descriptors). Now at most four are
 * tried, and none once the client left or the proxy closed.
 *
 * Here: a listener (python3, which the machines have) whose accept queue is full drops SYNs (Linux), so a connection
 * to it hangs as to a black hole;
 * the lookup answers it 20 times, with a 500 ms connect timeout.
 */
const ADDRESSES = 20;

let holder: ChildProcess;
let port: number;
const fillers: Socket[] = [];

function tcpSockets(): number {
  return process.getActiveResourcesInfo().filter((name) => name === 'TCPSocketWrap').length;
}

beforeAll(async () => {
  // Listens with a backlog of 0 and never accepts.
  holder = spawn(
    'python3',
    [
      '-c',
      'import socket,time\ns=socket.socket()\ns.bind(("127.0.0.1",0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(120)',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  port = Number(
    await new Promise<string>((resolve) => holder.stdout?.once('data', (data) => resolve(String(data)))),
  );
  // Fill its accept queue: from here on a SYN to it gets no answer.
  for (let i = 0; i < 2; i++) {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    fillers.push(socket);
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
});

afterAll(() => {
  for (const socket of fillers) socket.destroy();
  holder?.kill();
});

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
