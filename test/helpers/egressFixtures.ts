import { createHash } from 'node:crypto';
import { createSocket } from 'node:dgram';
import type { LookupAddress } from 'node:dns';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import { type AddressInfo, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Browser, Page } from 'puppeteer-core';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import type { HostLookup } from '../../shared/egress/egressGate';
import { egressChromiumArgs } from '../../shared/egress/egressProxy';

/**
 * A server that must never be reached. It counts every TCP connection (http, CONNECT tunnels, WebSockets alike)
 * and every UDP datagram (WebRTC/QUIC), so "zero" means nothing got through, whatever the protocol.
 */
export interface Canary {
  /** http://<host>:<port> */
  origin: string;
  host: string;
  port: number;
  /** host:port */
  hostPort: string;
  /** UDP port on the same host. */
  udpPort: number;
  /** TCP connections accepted so far. */
  readonly connections: number;
  /** UDP datagrams received so far. */
  readonly datagrams: number;
  /** Request targets seen so far (http requests, upgrades and CONNECTs). */
  hits: string[];
  close(): Promise<void>;
}

export async function startCanary(host = '127.0.0.1', port = 0): Promise<Canary> {
  let connections = 0;
  let datagrams = 0;
  const hits: string[] = [];
  const sockets = new Set<Duplex>();
  const server = createServer((req, res) => {
    hits.push(req.url ?? '/');
    // Something worth stealing, so a leak would be visible in a rendered page too.
    res.writeHead(200, { 'Content-Type': 'text/html', 'Access-Control-Allow-Origin': '*' });
    res.end('<title>CANARY-SECRET</title>CANARY-SECRET');
  });
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    hits.push(`upgrade ${req.url ?? ''}`);
    socket.destroy();
  });
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    hits.push(`connect ${req.url ?? ''}`);
    socket.destroy();
  });
  server.listen(port, host);
  await once(server, 'listening');
  const tcpPort = (server.address() as AddressInfo).port;

  const udp = createSocket('udp4');
  udp.on('message', () => {
    datagrams += 1;
  });
  udp.bind(0, host);
  await once(udp, 'listening');
  const udpPort = udp.address().port;

  return {
    origin: `http://${host}:${tcpPort}`,
    host,
    port: tcpPort,
    hostPort: `${host}:${tcpPort}`,
    udpPort,
    get connections() {
      return connections;
    },
    get datagrams() {
      return datagrams;
    },
    hits,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => udp.close(() => resolve()));
    },
  };
}

/** A server that accepts WebSockets and sends each client one text message (the allowed side of WebSocket tests). */
export interface WebSocketServer {
  /** ws://127.0.0.1:<port> */
  origin: string;
  hostPort: string;
  close(): Promise<void>;
}

export async function startWebSocketServer(message: string): Promise<WebSocketServer> {
  const sockets = new Set<Duplex>();
  const server = createServer((_, res) => res.writeHead(426).end());
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const key = req.headers['sec-websocket-key'];
    if (typeof key !== 'string') {
      socket.destroy();
      return;
    }
    // Only the handshake and one unmasked text frame (payload under 126 bytes): all a test needs.
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    const payload = Buffer.from(message);
    socket.write(Buffer.concat([Buffer.from([0x81, payload.length]), payload]));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    origin: `ws://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Chromium as the renderer runs it: its launch flags plus the egress flags. */
export async function launchEgressBrowser(proxyUrl: string): Promise<Browser> {
  return (await launchChromium(egressChromiumArgs(proxyUrl))).browser;
}

/** Polls the page title until it satisfies `done` (pages report what happened by setting document.title). */
export async function waitForTitle(
  page: Page,
  done: (title: string) => boolean,
  timeoutMs = 10_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const title = await page.title().catch(() => '');
    if (done(title)) return title;
    if (Date.now() > deadline) throw new Error(`page title never matched; last was "${title}"`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface ScriptedLookup {
  lookup: HostLookup;
  /** Host names looked up so far, in order. */
  calls: string[];
}

/**
 * A fake DNS. Each name maps to a list of answers used in turn (the last one repeats), so a test can make a name
 * resolve to a public address first and a private one afterwards (DNS rebinding). Unknown names fail like NXDOMAIN.
 */
export function scriptedLookup(answers: Record<string, string[][]>): ScriptedLookup {
  const calls: string[] = [];
  const used = new Map<string, number>();
  const lookup: HostLookup = async (hostname) => {
    calls.push(hostname);
    const sequence = answers[hostname];
    if (!sequence || sequence.length === 0) {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    }
    const n = used.get(hostname) ?? 0;
    used.set(hostname, n + 1);
    const addresses = sequence[Math.min(n, sequence.length - 1)] ?? [];
    return addresses.map((address): LookupAddress => ({ address, family: isIP(address) }));
  };
  return { lookup, calls };
}

/** NAME=value entries of a process's environment, as the kernel holds them. */
export async function environmentOf(pid: number): Promise<string[]> {
  return (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').filter(Boolean);
}
