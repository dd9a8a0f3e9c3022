import { once } from 'node:events';
import {
  Agent,
  type ClientRequestArgs,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import PQueue from 'p-queue';
import { effectivePort } from './allowList';
import { captureVerdicts } from './captureVerdicts';
import { createEgressGate, type EgressGate, type HostLookup } from './egressGate';
import { ownPorts } from './ownPorts';

/**
 * The single way out for Chromium: an HTTP proxy on loopback that forwards plain http requests and tunnels CONNECT
 * (https, ws, wss). Each connection resolves its host, checks every address with the same gate as the URL policy,
 * and connects to exactly the address it checked, so redirects, frames, subresources, WebSockets, workers and DNS
 * rebinding all meet the same rule.
 */
export interface EgressProxy {
  /** http://127.0.0.1:<port>, for --proxy-server: the browser's own traffic, and any context without a route. */
  readonly url: string;
  /** A way out of its own for one capture's browser context (see EgressRoute). */
  openRoute(): Promise<EgressRoute>;
  close(): Promise<void>;
}

/**
 * One capture's port on the proxy, given to its browser context as its proxy server, so the proxy knows which
 * capture each connection is for: the capture's connects in progress are bounded (MAX_PENDING_CONNECTS), its
 * verdicts are kept for its own connections only (captureVerdicts.ts), and everything it opened ends with it.
 */
export interface EgressRoute {
  /** http://127.0.0.1:<port>, for the context's proxyServer. */
  readonly url: string;
  /**
   * Ends every connection made through the route and every upstream connect still being opened, and takes no more:
   * Chromium keeps a context's proxy connections going after the context closed (red team: a page naming hundreds
   * of silent hosts left as many connects, two descriptors each, for 40 s after its capture).
   */
  close(): Promise<void>;
}

export interface BlockedEgress {
  host: string;
  port: number;
  reason: string;
}

export interface EgressProxyOptions {
  /** Raw ALLOW_PRIVATE_HOSTS. */
  allowPrivateHosts: string;
  lookup?: HostLookup;
  /** Called for every refused destination (logging; never shown to the customer beyond a generic failure). */
  onBlocked?: (blocked: BlockedEgress) => void;
  /** Time to open the upstream TCP connection. */
  connectTimeoutMs?: number;
  /** A connection with no traffic in either direction for this long is closed. */
  idleTimeoutMs?: number;
}

/**
 * Upstream connections one listener (one capture's route) opens at once; more wait for a place. Chromium itself
 * keeps to 32 connections per proxy server for pages, but not for WebSockets, nor once a context closed.
 */
export const MAX_PENDING_CONNECTS = 32;

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const settings: ListenerSettings = {
    gate: createEgressGate(options),
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    onBlocked: options.onBlocked ?? (() => {}),
  };
  const browserWide = await startListener(settings);
  const routes = new Set<Listener>();
  return {
    url: browserWide.url,
    async openRoute() {
      const route = await startListener({
        ...settings,
        gate: captureVerdicts(settings.gate, MAX_ADDRESSES_TRIED),
      });
      routes.add(route);
      return {
        url: route.url,
        async close() {
          routes.delete(route);
          await route.close();
        },
      };
    },
    async close() {
      await Promise.all([browserWide, ...routes].map((listener) => listener.close()));
      routes.clear();
    },
  };
}

interface ListenerSettings {
  gate: EgressGate;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  onBlocked: (blocked: BlockedEgress) => void;
}

interface Listener {
  url: string;
  close(): Promise<void>;
}

/** One loopback port of the proxy, with the connections made through it. */
async function startListener(settings: ListenerSettings): Promise<Listener> {
  const { connectTimeoutMs, idleTimeoutMs } = settings;
  /** Aborted when the listener closes: no connection made through it is tried on. */
  const stopped = new AbortController();
  // Connects beyond the bound wait in turn; one whose client left (or whose listener closed) leaves the queue.
  const slots = new PQueue({ concurrency: MAX_PENDING_CONNECTS });
  const sockets = new Set<Duplex>();
  const track = (socket: Duplex) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  // Upstream connections are kept alive for the client connection that opened them only, and end with it. Chromium
  // holds its proxy connections per browser context, so one capture's upstream connection never serves another's:
  // a site that keeps a sign-in per connection (NTLM, Negotiate) would otherwise answer the next customer's capture
  // as the previous one's.
  const agents = new WeakMap<Duplex, PinnedAgent>();
  const agentOf = (client: Duplex) => {
    let agent = agents.get(client);
    if (!agent) {
      const created = new PinnedAgent(
        connectTimeoutMs,
        idleTimeoutMs,
        slots,
        whileConnected(client, stopped.signal),
      );
      client.once('close', () => created.destroy());
      agents.set(client, created);
      agent = created;
    }
    return agent;
  };

  const server = createServer();
  // Chromium reuses proxy connections between requests; keep them a little longer than the default 5 s.
  server.keepAliveTimeout = 30_000;
  server.on('connection', track);
  // A malformed request from Chromium must not reach the default handler (or crash anything): just drop it.
  server.on('clientError', (_error, socket) => socket.destroy());
  server.on('request', (req, res) => {
    forward(req, res, { ...settings, agent: agentOf(req.socket) }).catch(() => res.destroy());
  });
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    const context = { ...settings, slots, track, wanted: whileConnected(client, stopped.signal) };
    tunnel(req, client, head, context).catch(() => client.destroy());
  });
  // No 'upgrade' listener: Node destroys plain-http Upgrade requests; Chromium sends WebSockets as CONNECT.

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const leaveOwnPorts = ownPorts.add(port);

  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      leaveOwnPorts();
      stopped.abort();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Each client connection's upstream connections end with it.
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/**
 * The proxy bypass rules of the browser and of every context given a route: none. Without `<-loopback>` Chromium
 * sends loopback (127/8, [::1], localhost) directly, bypassing the proxy.
 */
export const PROXY_BYPASS_RULES = ['<-loopback>'];

/**
 * The launch flags that route all of Chromium's traffic through the proxy and close the side doors. Checked against
 * the Chromium 147 headless shell: chrome-only switches (e.g. --disable-background-networking) do not exist there.
 */
export function egressChromiumArgs(proxyUrl: string): string[] {
  return [
    `--proxy-server=${proxyUrl}`,
    `--proxy-bypass-list=${PROXY_BYPASS_RULES.join(',')}`,
    // QUIC is UDP and would not go through an HTTP proxy.
    '--disable-quic',
    // WebRTC could otherwise send UDP (STUN/TURN, ICE) straight to any address.
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  ];
}

// ---------------------------------------------------------------------------------------------------------------

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Drops hop-by-hop headers, proxy headers and anything the Connection header names; keeps order and duplicates. */
function endToEndHeaders(raw: string[]): string[] {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]?.toLowerCase() === 'connection') {
      for (const token of (raw[i + 1] ?? '').split(',')) named.add(token.trim().toLowerCase());
    }
  }
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] ?? '';
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named.has(lower)) continue;
    out.push(name, raw[i + 1] ?? '');
  }
  return out;
}

interface ForwardContext extends ListenerSettings {
  /** The agent of the client connection the request came on. */
  agent: PinnedAgent;
}

/** Plain http through the proxy: the request line carries an absolute URL. */
async function forward(req: IncomingMessage, res: ServerResponse, ctx: ForwardContext): Promise<void> {
  req.on('error', () => res.destroy());
  let url: URL;
  try {
    url = new URL(req.url ?? '');
  } catch {
    // Origin-form ("GET /"): someone talking to the proxy as if it were a web server.
    res
      .writeHead(400, { 'Content-Type': 'text/plain', Connection: 'close' })
      .end('absolute http URL required');
    return;
  }
  if (url.protocol !== 'http:') {
    res.writeHead(400, { 'Content-Type': 'text/plain', Connection: 'close' }).end('only http is proxied');
    return;
  }
  const port = effectivePort(url);
  const verdict = await ctx.gate.check(url.hostname, port);
  if (verdict.kind !== 'allowed') {
    if (verdict.kind === 'refused') ctx.onBlocked({ host: url.hostname, port, reason: verdict.reason });
    // No HTTP answer at all: Chromium treats it as a network error, exactly like a refused CONNECT, so a blocked
    // page fails the navigation (500) instead of being captured as an error page.
    res.socket?.destroy();
    return;
  }
  // Chromium may have given up while we resolved; its 'close' has then already fired.
  if (!res.socket || res.socket.destroyed) return;

  const headers = endToEndHeaders(req.rawHeaders);
  if (!headers.some((_, i) => i % 2 === 0 && headers[i]?.toLowerCase() === 'host'))
    headers.push('Host', url.host);
  const upstreamOptions: PinnedRequestArgs = {
    agent: ctx.agent,
    pinned: verdict.addresses,
    host: verdict.addresses[0],
    port,
    method: req.method,
    path: `${url.pathname}${url.search}`,
    headers,
    setHost: false,
  };
  const upstream = httpRequest(upstreamOptions);
  upstream.setTimeout(ctx.idleTimeoutMs, () => upstream.destroy(new Error('upstream idle timeout')));
  upstream.on('error', () => {
    // Before a response: the connection failed, same as an unreachable host. After: cut the response short.
    if (res.headersSent) res.destroy();
    else res.socket?.destroy();
  });
  upstream.on('response', (upstreamRes) => {
    upstreamRes.on('error', () => res.destroy());
    try {
      res.writeHead(
        upstreamRes.statusCode ?? 502,
        upstreamRes.statusMessage,
        endToEndHeaders(upstreamRes.rawHeaders),
      );
    } catch {
      // A status line or header Node refuses to write (invalid characters): treat as a broken upstream.
      upstream.destroy();
      res.socket?.destroy();
      return;
    }
    upstreamRes.pipe(res);
  });
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

interface TunnelContext extends ListenerSettings {
  slots: PQueue;
  track: (socket: Duplex) => void;
  /** Aborted once no one waits for the connection: the client left, or its listener closed. */
  wanted: AbortSignal;
}

/**
 * Aborted when `client` closes or `stopped` aborts. Its listener on `stopped` goes with the client (AbortSignal.any
 * on the proxy's lifelong signal kept a few hundred bytes per connection for the renderer's life: red team).
 */
function whileConnected(client: Duplex, stopped: AbortSignal): AbortSignal {
  const wanted = new AbortController();
  const stop = () => wanted.abort();
  if (stopped.aborted) stop();
  else stopped.addEventListener('abort', stop, { once: true });
  client.once('close', () => {
    stopped.removeEventListener('abort', stop);
    stop();
  });
  return wanted.signal;
}

/** CONNECT host:port: https, and WebSockets (ws and wss) from Chromium. */
async function tunnel(req: IncomingMessage, client: Duplex, head: Buffer, ctx: TunnelContext): Promise<void> {
  let upstream: Socket | undefined;
  client.on('error', () => upstream?.destroy());
  client.on('close', () => upstream?.destroy());

  const target = parseAuthority(req.url ?? '');
  if (!target) return refuse(client, 400, 'Bad Request');
  const verdict = await ctx.gate.check(target.host, target.port);
  if (verdict.kind === 'refused') {
    ctx.onBlocked({ host: target.host, port: target.port, reason: verdict.reason });
    return refuse(client, 403, 'Forbidden');
  }
  if (verdict.kind === 'unresolved') return refuse(client, 502, 'Bad Gateway');
  if (client.destroyed) return;

  try {
    upstream = await connectPinned(
      verdict.addresses,
      target.port,
      ctx.connectTimeoutMs,
      ctx.slots,
      ctx.wanted,
    );
  } catch {
    return refuse(client, 502, 'Bad Gateway');
  }
  if (client.destroyed) {
    upstream.destroy();
    return;
  }
  ctx.track(upstream);
  const up = upstream;
  up.on('error', () => client.destroy());
  up.on('close', () => client.destroy());
  up.setTimeout(ctx.idleTimeoutMs, () => up.destroy());
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (head.length > 0) up.write(head);
  up.pipe(client);
  client.pipe(up);
}

function refuse(client: Duplex, status: number, text: string): void {
  if (client.destroyed) return;
  client.end(`HTTP/1.1 ${status} ${text}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
}

/** "host:port" or "[v6]:port" from a CONNECT line, normalised the way the URL parser normalises hosts. */
function parseAuthority(authority: string): { host: string; port: number } | undefined {
  if (authority.lastIndexOf(':') <= authority.lastIndexOf(']')) return undefined;
  let url: URL;
  try {
    url = new URL(`http://${authority}`);
  } catch {
    return undefined;
  }
  if (url.pathname !== '/' || url.search !== '' || url.username !== '' || url.password !== '')
    return undefined;
  return { host: url.hostname, port: effectivePort(url) };
}

/**
 * At most this many of a host's checked addresses are tried. A page's own name server may answer a name with dozens
 * of addresses that never answer (red team): tried one after the other, each for the connect timeout, they kept the
 * proxy connecting for minutes after anyone waited.
 */
const MAX_ADDRESSES_TRIED = 4;

/**
 * Connects to the checked addresses in order (the first that answers), never to anything re-resolved, once one of
 * the listener's slots is free; stops as soon as `wanted` aborts (the client left, the listener closed).
 */
function connectPinned(
  addresses: readonly string[],
  port: number,
  timeoutMs: number,
  slots: PQueue,
  wanted: AbortSignal,
): Promise<Socket> {
  return slots.add(
    async () => {
      let lastError: unknown = new Error('no address');
      for (const address of addresses.slice(0, MAX_ADDRESSES_TRIED)) {
        if (wanted.aborted) break;
        try {
          return await connectOnce(address, port, timeoutMs, wanted);
        } catch (error) {
          lastError = error;
        }
      }
      throw lastError;
    },
    { signal: wanted },
  );
}

function connectOnce(address: string, port: number, timeoutMs: number, wanted: AbortSignal): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, noDelay: true });
    const timer = setTimeout(() => socket.destroy(new Error('connect timeout')), timeoutMs);
    const abandon = () => socket.destroy(new Error('no longer wanted'));
    wanted.addEventListener('abort', abandon, { once: true });
    socket.once('connect', () => {
      clearTimeout(timer);
      wanted.removeEventListener('abort', abandon);
      socket.removeListener('error', reject);
      resolve(socket);
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      wanted.removeEventListener('abort', abandon);
      reject(error);
    });
  });
}

interface PinnedRequestArgs extends ClientRequestArgs {
  /** The checked addresses; the agent connects to these and nothing else. */
  pinned: string[];
}

/**
 * Keep-alive pool for plain-http upstreams, keyed by the exact checked address list and port, so a pooled socket
 * is only reused by a request whose check allowed every address that socket might be connected to.
 */
class PinnedAgent extends Agent {
  constructor(
    private readonly connectTimeoutMs: number,
    idleTimeoutMs: number,
    private readonly slots: PQueue,
    /** Aborted once its client connection closed or its listener did. */
    private readonly wanted: AbortSignal,
  ) {
    super({ keepAlive: true, timeout: idleTimeoutMs, scheduling: 'lifo' });
  }

  override getName(options?: ClientRequestArgs): string {
    const pinned = (options as PinnedRequestArgs | undefined)?.pinned ?? [];
    return `${pinned.join(',')}|${options?.port ?? ''}`;
  }

  override createConnection(
    options: ClientRequestArgs,
    callback?: (error: Error | null, socket: Duplex) => void,
  ): undefined {
    const { pinned } = options as PinnedRequestArgs;
    connectPinned(pinned, Number(options.port), this.connectTimeoutMs, this.slots, this.wanted).then(
      (socket) => callback?.(null, socket),
      (error: Error) => callback?.(error, undefined as unknown as Duplex),
    );
    return undefined;
  }
}
