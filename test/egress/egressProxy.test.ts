import { once } from 'node:events';
import { Agent, type IncomingHttpHeaders, type IncomingMessage, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type BlockedEgress,
  type EgressProxy,
  egressChromiumArgs,
  startEgressProxy,
} from '../../shared/egress/egressProxy';
import { type Canary, scriptedLookup, startCanary } from '../helpers/egressFixtures';
import { type PageServer, startPageServer } from '../helpers/pageServer';

interface ProxyAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

/** An HTTP request through the proxy, absolute-form, as Chromium sends plain http. Rejects if no answer comes. */
function viaProxy(
  proxy: { url: string },
  target: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; agent?: Agent } = {},
): Promise<ProxyAnswer> {
  const { port } = new URL(proxy.url);
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      method: options.method ?? 'GET',
      path: target,
      headers: { Host: safeHost(target), ...options.headers },
      agent: options.agent ?? false,
    });
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          rawHeaders: res.rawHeaders,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.end(options.body);
  });
}

function safeHost(target: string): string {
  try {
    return new URL(target).host;
  } catch {
    return 'example.invalid';
  }
}

/** CONNECT through the proxy: the status line, and the tunnel socket when it was established. */
function connectVia(proxy: { url: string }, authority: string): Promise<{ status: number; socket: Socket }> {
  const { port } = new URL(proxy.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'CONNECT', path: authority, agent: false });
    req.on('error', reject);
    req.on('connect', (res: IncomingMessage, socket: Socket) =>
      resolve({ status: res.statusCode ?? 0, socket }),
    );
    req.end();
  });
}

/** A plain GET written by hand inside an established tunnel. */
async function getThroughTunnel(socket: Socket, host: string, path: string): Promise<string> {
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await once(socket, 'end');
  return Buffer.concat(chunks).toString();
}

let site: PageServer;
let canary: Canary;
let rebindCanary: Canary;
const proxies: EgressProxy[] = [];
/** The site's connections, numbered in the order they came. */
const upstreamConnections = new Map<Socket, number>();

async function proxyWith(
  options: Partial<Parameters<typeof startEgressProxy>[0]> = {},
): Promise<EgressProxy> {
  const proxy = await startEgressProxy({ allowPrivateHosts: site.hostPort, ...options });
  proxies.push(proxy);
  return proxy;
}

beforeAll(async () => {
  site = await startPageServer({
    '/': '<title>public</title>',
    '/echo': (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            method: req.method,
            headers: req.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
      });
    },
    '/cookies': (_, res) => {
      res.writeHead(200, [
        ['Set-Cookie', 'a=1'],
        ['Set-Cookie', 'b=2'],
        ['Connection', 'keep-alive, X-Hop'],
        ['X-Hop', 'secret-hop'],
        ['Keep-Alive', 'timeout=5'],
      ]);
      res.end('ok');
    },
    '/connection': (req, res) => {
      const { socket } = req;
      if (!upstreamConnections.has(socket)) upstreamConnections.set(socket, upstreamConnections.size + 1);
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end(String(upstreamConnections.get(socket)));
    },
    '/hang': () => {
      // Never answers.
    },
    '/reset': (req) => {
      req.socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial');
      setTimeout(() => req.socket.destroy(), 20);
    },
  });
  canary = await startCanary('127.0.0.1');
  // Same port as the allowed site, another loopback address: only a re-resolving proxy would reach it.
  rebindCanary = await startCanary('127.0.0.2', site.port);
});

afterEach(async () => {
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
});

afterAll(async () => {
  await Promise.all([site?.close(), canary?.close(), rebindCanary?.close()]);
  expect(canary.connections).toBe(0);
  expect(rebindCanary.connections).toBe(0);
});

describe('startEgressProxy, plain http', () => {
  it('listens on loopback only', async () => {
    const proxy = await proxyWith();
    expect(new URL(proxy.url).hostname).toBe('127.0.0.1');
  });

  it('forwards a request for the allowed server and returns its answer', async () => {
    const proxy = await proxyWith();
    const answer = await viaProxy(proxy, `${site.origin}/`);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('<title>public</title>');
  });

  it('sends the original Host header and the request body upstream', async () => {
    const proxy = await proxyWith();
    const answer = await viaProxy(proxy, `${site.origin}/echo?x=1`, { method: 'POST', body: 'hello' });
    const echoed = JSON.parse(answer.body) as {
      method: string;
      headers: Record<string, string>;
      body: string;
    };
    expect(echoed).toMatchObject({ method: 'POST', body: 'hello' });
    expect(echoed.headers.host).toBe(site.hostPort);
  });

  it('strips proxy and hop-by-hop request headers', async () => {
    const proxy = await proxyWith();
    const answer = await viaProxy(proxy, `${site.origin}/echo`, {
      headers: {
        'Proxy-Authorization': 'Basic c2VjcmV0',
        'Proxy-Connection': 'keep-alive',
        Connection: 'X-Private',
        'X-Private': 'hop',
        'X-Kept': 'end-to-end',
      },
    });
    const { headers } = JSON.parse(answer.body) as { headers: Record<string, string> };
    expect(headers['proxy-authorization']).toBeUndefined();
    expect(headers['proxy-connection']).toBeUndefined();
    expect(headers['x-private']).toBeUndefined();
    expect(headers['x-kept']).toBe('end-to-end');
  });

  it('keeps repeated response headers and strips hop-by-hop ones', async () => {
    const proxy = await proxyWith();
    const answer = await viaProxy(proxy, `${site.origin}/cookies`);
    expect(answer.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(answer.headers['x-hop']).toBeUndefined();
    expect(answer.headers['keep-alive']).toBeUndefined();
  });

  it('keeps an upstream connection for the client connection that opened it, never for another', async () => {
    const proxy = await proxyWith();
    // Chromium holds its proxy connections per browser context: one capture's connection is never another's.
    const first = new Agent({ keepAlive: true, maxSockets: 1 });
    const second = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const on = async (agent: Agent) => (await viaProxy(proxy, `${site.origin}/connection`, { agent })).body;
      const firstOn = await on(first);
      // Kept alive for the same client connection.
      expect(await on(first)).toBe(firstOn);
      // A site that keeps a sign-in per connection (NTLM) would take the next client for the first.
      expect(await on(second)).not.toBe(firstOn);
    } finally {
      first.destroy();
      second.destroy();
    }
  });

  it('drops the connection without any answer for a private address on a port not allowed', async () => {
    const proxy = await proxyWith();
    await expect(viaProxy(proxy, `${canary.origin}/`)).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(canary.connections).toBe(0);
  });

  it('reports each refused destination with its reason', async () => {
    const blocked: BlockedEgress[] = [];
    const proxy = await proxyWith({ onBlocked: (b) => blocked.push(b) });
    await viaProxy(proxy, 'http://169.254.169.254/latest/meta-data/').catch(() => undefined);
    expect(blocked).toEqual([
      { host: '169.254.169.254', port: 80, reason: expect.stringContaining('169.254.169.254') },
    ]);
  });

  it('refuses a name that resolves to a private address', async () => {
    const { lookup } = scriptedLookup({ 'internal.example': [[canary.host]] });
    const proxy = await proxyWith({ lookup });
    await expect(viaProxy(proxy, `http://internal.example:${canary.port}/`)).rejects.toThrow();
    expect(canary.connections).toBe(0);
  });

  it('refuses localhost names without asking DNS', async () => {
    const { lookup, calls } = scriptedLookup({});
    const proxy = await proxyWith({ lookup });
    await expect(viaProxy(proxy, `http://localhost:${canary.port}/`)).rejects.toThrow();
    await expect(viaProxy(proxy, `http://x.localhost:${canary.port}/`)).rejects.toThrow();
    expect(calls).toEqual([]);
  });

  it('drops the connection for a name that does not resolve', async () => {
    const proxy = await proxyWith({ lookup: scriptedLookup({}).lookup });
    await expect(viaProxy(proxy, 'http://nxdomain.example/')).rejects.toThrow();
  });

  it('answers 400 to a request that is not an absolute http URL', async () => {
    const proxy = await proxyWith();
    expect((await viaProxy(proxy, '/')).status).toBe(400);
    expect((await viaProxy(proxy, `ftp://${site.hostPort}/`)).status).toBe(400);
  });

  it('refuses a request for the proxy itself', async () => {
    const proxy = await proxyWith();
    await expect(viaProxy(proxy, `${proxy.url}/`)).rejects.toThrow();
  });

  it('never passes a plain-http Upgrade on: the upstream sees an ordinary request', async () => {
    const proxy = await proxyWith();
    const headers = {
      Connection: 'Upgrade',
      Upgrade: 'websocket',
      'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
    };
    const answer = await viaProxy(proxy, `${site.origin}/echo`, { headers });
    const echoed = JSON.parse(answer.body) as { headers: Record<string, string> };
    expect(echoed.headers.upgrade).toBeUndefined();
    expect(echoed.headers.connection).not.toMatch(/upgrade/i);
  });
});

describe('startEgressProxy, CONNECT', () => {
  it('tunnels to the allowed server', async () => {
    const proxy = await proxyWith();
    const { status, socket } = await connectVia(proxy, site.hostPort);
    expect(status).toBe(200);
    expect(await getThroughTunnel(socket, site.hostPort, '/')).toContain('<title>public</title>');
  });

  it.each([
    ['a private address on a port not allowed', () => canary.hostPort],
    ['the allowed address on another port', () => `127.0.0.1:${canary.port}`],
    ['the metadata address', () => '169.254.169.254:80'],
    ['IPv6 loopback', () => `[::1]:${canary.port}`],
    ['IPv4-mapped loopback', () => `[::ffff:127.0.0.1]:${canary.port}`],
    ['a decimal loopback', () => `2130706433:${canary.port}`],
    ['localhost', () => `localhost:${canary.port}`],
  ])('answers 403 to %s', async (_, authority) => {
    const proxy = await proxyWith();
    const { status } = await connectVia(proxy, authority());
    expect(status).toBe(403);
    expect(canary.connections).toBe(0);
  });

  it('answers 400 to an authority without a port or with a path', async () => {
    const proxy = await proxyWith();
    expect((await connectVia(proxy, '127.0.0.1')).status).toBe(400);
    expect((await connectVia(proxy, `${site.hostPort}/x`)).status).toBe(400);
  });

  it('answers 502 to a name that does not resolve', async () => {
    const proxy = await proxyWith({ lookup: scriptedLookup({}).lookup });
    expect((await connectVia(proxy, 'nxdomain.example:443')).status).toBe(502);
  });

  it('answers 502 when the allowed server refuses the connection', async () => {
    const closed = await startPageServer({});
    const hostPort = closed.hostPort;
    await closed.close();
    const proxy = await proxyWith({ allowPrivateHosts: hostPort });
    expect((await connectVia(proxy, hostPort)).status).toBe(502);
  });
});

describe('startEgressProxy against DNS rebinding', () => {
  /** First answer: the allowed address; every later answer: the canary's address on the same port. */
  const rebinding = () => scriptedLookup({ 'rebind.example': [['127.0.0.1'], ['127.0.0.2']] });

  it('resolves a CONNECT target once and connects to the address it checked', async () => {
    const dns = rebinding();
    const proxy = await proxyWith({ lookup: dns.lookup });
    const { status, socket } = await connectVia(proxy, `rebind.example:${site.port}`);
    expect(status).toBe(200);
    expect(await getThroughTunnel(socket, `rebind.example:${site.port}`, '/')).toContain(
      '<title>public</title>',
    );
    expect(dns.calls).toEqual(['rebind.example']);
    expect(rebindCanary.connections).toBe(0);
  });

  it('resolves a plain http request once and connects to the address it checked', async () => {
    const dns = rebinding();
    const proxy = await proxyWith({ lookup: dns.lookup });
    const answer = await viaProxy(proxy, `http://rebind.example:${site.port}/`);
    expect(answer.body).toBe('<title>public</title>');
    expect(dns.calls).toEqual(['rebind.example']);
    expect(rebindCanary.connections).toBe(0);
  });

  it('refuses the next request once the name has rebound to a private address', async () => {
    const dns = rebinding();
    const proxy = await proxyWith({ lookup: dns.lookup });
    await viaProxy(proxy, `http://rebind.example:${site.port}/`);
    await expect(viaProxy(proxy, `http://rebind.example:${site.port}/`)).rejects.toThrow();
    expect((await connectVia(proxy, `rebind.example:${site.port}`)).status).toBe(403);
    expect(rebindCanary.connections).toBe(0);
  });
});

describe("a capture's route", () => {
  it('forwards and tunnels as the proxy does, and refuses what it refuses', async () => {
    const route = await (await proxyWith()).openRoute();
    expect(route.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await viaProxy(route, `${site.origin}/`)).body).toBe('<title>public</title>');
    const { status, socket } = await connectVia(route, site.hostPort);
    expect(status).toBe(200);
    expect(await getThroughTunnel(socket, site.hostPort, '/')).toContain('<title>public</title>');
    expect((await connectVia(route, canary.hostPort)).status).toBe(403);
    expect(canary.connections).toBe(0);
  });

  it("keeps a verdict for its own connections only, never answering another route's from it", async () => {
    // refused.example resolves to a loopback address the allow list does not name: refused, and kept.
    const dns = scriptedLookup({ 'refused.example': [['127.0.0.1']], 'site.example': [['127.0.0.1']] });
    const proxy = await proxyWith({ lookup: dns.lookup });
    const first = await proxy.openRoute();
    for (let i = 0; i < 3; i++) expect((await connectVia(first, 'refused.example:443')).status).toBe(403);
    expect(dns.calls).toEqual(['refused.example']);
    const second = await proxy.openRoute();
    expect((await connectVia(second, 'refused.example:443')).status).toBe(403);
    expect(dns.calls).toEqual(['refused.example', 'refused.example']);
    // One that allows a private address (ALLOW_PRIVATE_HOSTS) is asked again each time: a port of the service may
    // start listening there later (test/security/proxyRouteStaleOwnPorts.test.ts).
    for (let i = 0; i < 2; i++)
      expect((await connectVia(first, `site.example:${site.port}`)).status).toBe(200);
    expect(dns.calls.filter((name) => name === 'site.example')).toHaveLength(2);
  });

  it('asks again for a name that did not resolve', async () => {
    const dns = scriptedLookup({});
    const route = await (await proxyWith({ lookup: dns.lookup })).openRoute();
    expect((await connectVia(route, 'nxdomain.example:443')).status).toBe(502);
    expect((await connectVia(route, 'nxdomain.example:443')).status).toBe(502);
    expect(dns.calls).toEqual(['nxdomain.example', 'nxdomain.example']);
  });

  it("when closed, ends its own tunnels and takes no more, and leaves other routes' and the browser's", async () => {
    const proxy = await proxyWith();
    const [closing, other] = [await proxy.openRoute(), await proxy.openRoute()];
    const ended = (await connectVia(closing, site.hostPort)).socket;
    const kept = [
      (await connectVia(other, site.hostPort)).socket,
      (await connectVia(proxy, site.hostPort)).socket,
    ];
    const endedClosed = once(ended, 'close');
    await closing.close();
    await endedClosed;
    await expect(connectVia(closing, site.hostPort)).rejects.toThrow();
    for (const socket of kept) {
      expect(socket.destroyed).toBe(false);
      expect(await getThroughTunnel(socket, site.hostPort, '/')).toContain('<title>public</title>');
    }
  });
});

describe('startEgressProxy robustness', () => {
  it('survives a client that gives up while the upstream hangs, and keeps serving', async () => {
    const proxy = await proxyWith();
    const { port } = new URL(proxy.url);
    const req = request({ host: '127.0.0.1', port, path: `${site.origin}/hang`, agent: false });
    req.on('error', () => undefined);
    req.end();
    await new Promise((resolve) => setTimeout(resolve, 100));
    req.destroy();
    expect((await viaProxy(proxy, `${site.origin}/`)).status).toBe(200);
  });

  it('cuts the answer short when the upstream resets mid-response, and keeps serving', async () => {
    const proxy = await proxyWith();
    await expect(viaProxy(proxy, `${site.origin}/reset`)).rejects.toThrow();
    expect((await viaProxy(proxy, `${site.origin}/`)).status).toBe(200);
  });

  it('closes the connection on garbage, and keeps serving', async () => {
    const proxy = await proxyWith();
    const socket = connect(Number(new URL(proxy.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write('\x00\x01\x02 not http at all\r\n\r\n');
    await once(socket, 'close');
    expect((await viaProxy(proxy, `${site.origin}/`)).status).toBe(200);
  });

  it('closes an idle tunnel after the idle timeout', async () => {
    const proxy = await proxyWith({ idleTimeoutMs: 200 });
    const { socket } = await connectVia(proxy, site.hostPort);
    const started = Date.now();
    await once(socket, 'close');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('times out a request whose upstream never answers', async () => {
    const proxy = await proxyWith({ idleTimeoutMs: 200 });
    await expect(viaProxy(proxy, `${site.origin}/hang`)).rejects.toThrow();
  });

  it("closes open tunnels, its routes' too, when it is closed", async () => {
    const proxy = await startEgressProxy({ allowPrivateHosts: site.hostPort });
    const route = await proxy.openRoute();
    const sockets = [
      (await connectVia(proxy, site.hostPort)).socket,
      (await connectVia(route, site.hostPort)).socket,
    ];
    const closed = sockets.map((socket) => once(socket, 'close'));
    await proxy.close();
    await Promise.all(closed);
  });
});

describe('egressChromiumArgs', () => {
  it('routes everything, loopback included, through the proxy and turns off UDP side doors', () => {
    const args = egressChromiumArgs('http://127.0.0.1:1234');
    expect(args).toEqual(
      expect.arrayContaining([
        '--proxy-server=http://127.0.0.1:1234',
        '--proxy-bypass-list=<-loopback>',
        '--disable-quic',
        '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
      ]),
    );
  });
});
