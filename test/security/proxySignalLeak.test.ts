import { connect } from 'node:net';
import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startEgressProxy } from '../../shared/egress/egressProxy';
import { collectGarbage } from '../helpers/heldBytes';

/**
 * Red team (round 3): the egress proxy lives as long as the renderer process (a warm Lambda, npm start's renderer) and
 * every CONNECT, and every plain-http client connection, makes AbortSignal.any([its client's, the proxy's `stopped`]).
 * Node keeps each such signal in the long-lived `stopped` signal's set of dependents and never drops it after the
 * connection ends, so memory grows with every connection any page ever made. A page makes thousands of CONNECTs a
 * capture (one per refused or new host); here 20 000 refused ones, sequentially, each closed.
 */
const CONNECTS = 20_000;

function heapUsed(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

async function connectOnce(port: number): Promise<void> {
  await new Promise<void>((resolve) => {
    const client = connect(port, '127.0.0.1');
    client.on('error', () => resolve());
    client.on('close', () => resolve());
    // A loopback name: refused at once, without DNS.
    client.write('CONNECT localhost:1 HTTP/1.1\r\nHost: localhost:1\r\n\r\n');
    client.on('data', () => client.destroy());
  });
}

describe('the egress proxy over many connections', () => {
  it('keeps no memory for connections that have ended', async () => {
    const proxy = await startEgressProxy({ allowPrivateHosts: '' });
    const port = Number(new URL(proxy.url).port);
    for (let i = 0; i < 1_000; i++) await connectOnce(port);
    await turn();
    const before = heapUsed();
    for (let i = 0; i < CONNECTS; i++) await connectOnce(port);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const grown = heapUsed() - before;
    await proxy.close();
    // Generous: 100 bytes per ended connection.
    expect(grown).toBeLessThan(CONNECTS * 100);
  }, 300_000);
});
