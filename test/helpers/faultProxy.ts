import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * How the relay treats connections:
 * - `up`: relays bytes both ways to the target;
 * - `down`: not listening, so connecting is refused (the endpoint is unreachable);
 * - `blackhole`: accepts connections and swallows what is sent, never answering (a partition or a stuck server);
 * - `slow`: relays requests at once but holds each answer back for `slowMs` (the server acted, the answer is late).
 */
export type FaultMode = 'up' | 'down' | 'blackhole' | 'slow';

export interface FaultProxy {
  /** http://127.0.0.1:<port>, stable across mode changes. */
  endpoint: string;
  readonly mode: FaultMode;
  /** Switches mode; connections open in the old mode are cut, so no pooled socket carries over. */
  setMode(mode: FaultMode): Promise<void>;
  /** How long `slow` holds answers back (default 1 s). */
  slowMs: number;
  close(): Promise<void>;
}

/** A TCP relay in front of `target` (http://host:port) that a test can cut and restore on the same port. */
export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const { hostname, port: targetPort } = new URL(target);
  const sockets = new Set<Socket>();
  let mode: FaultMode = 'up';
  let server: Server | undefined;
  let port = 0;

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };

  const onConnection = (client: Socket) => {
    track(client);
    if (mode === 'blackhole') {
      client.resume();
      return;
    }
    const upstream = connect(Number(targetPort), hostname);
    track(upstream);
    client.pipe(upstream);
    if (mode === 'slow') {
      const delay = proxy.slowMs;
      upstream.on('data', (chunk: Buffer) => setTimeout(() => client.writable && client.write(chunk), delay));
    } else {
      upstream.pipe(client);
    }
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  };

  async function listen(): Promise<void> {
    server = createServer(onConnection);
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  }

  async function stopListening(): Promise<void> {
    const current = server;
    server = undefined;
    if (current) await new Promise<void>((resolve) => current.close(() => resolve()));
  }

  await listen();
  const proxy: FaultProxy = {
    slowMs: 1_000,
    endpoint: `http://127.0.0.1:${port}`,
    get mode() {
      return mode;
    },
    async setMode(next) {
      for (const socket of sockets) socket.destroy();
      mode = next;
      if (next === 'down') await stopListening();
      else if (!server) await listen();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await stopListening();
    },
  };
  return proxy;
}
