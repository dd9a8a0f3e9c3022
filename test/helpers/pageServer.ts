import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer } from 'node:net';

export type PageHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface PageServer {
  /** http://<host>:<port> */
  origin: string;
  port: number;
  /** host:port, the form ALLOW_PRIVATE_HOSTS takes. */
  hostPort: string;
  /** Paths requested so far, in order (e.g. to prove a canary was never hit). */
  hits: string[];
  /** The server itself, for what a page handler cannot answer (a WebSocket's upgrade). */
  server: Server;
  close(): Promise<void>;
}

/**
 * Serves test pages on 127.0.0.1 (or another loopback address, for a second host). `pages` maps a path to HTML
 * (served as text/html) or to a handler for anything else (redirects, status codes, slow responses). Unknown paths
 * get 404.
 */
export async function startPageServer(
  pages: Record<string, string | PageHandler>,
  host = '127.0.0.1',
): Promise<PageServer> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.push(req.url ?? '/');
    const page = pages[path];
    if (typeof page === 'function') return page(req, res);
    if (page === undefined) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
  });
  const port = await listenOn(server, host);
  return {
    origin: `http://${host}:${port}`,
    port,
    hostPort: `${host}:${port}`,
    hits,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Listens on `host` and gives the port. On 127.0.0.1 the kernel picks it. On another loopback address a port it
 * would pick could be one the service listens on at 127.0.0.1 at the same moment (each capture's egress route opens
 * one), and the egress gate refuses a private address on the service's own ports whatever its address (ownPorts.ts):
 * the page would fail now and then. So there the port comes from below the kernel's ephemeral range (32768 and up
 * on Linux), where no `listen(0)` of the service lands.
 */
async function listenOn(server: Server, host: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const wanted = host === '127.0.0.1' ? 0 : 20_000 + Math.floor(Math.random() * 12_000);
    server.listen(wanted, host);
    try {
      await once(server, 'listening');
      return (server.address() as AddressInfo).port;
    } catch (error) {
      // Taken by another test's server: try another port.
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 20) throw error;
    }
  }
}

/** A complete HTML document with a solid background, handy for checking pixels. */
export function solidPage(color: string, extraHead = '', body = ''): string {
  return `<!doctype html><html><head><meta charset="utf-8">${extraHead}<style>html,body{margin:0;background:${color}}</style></head><body>${body}</body></html>`;
}

/**
 * `/slow`, a solid page whose load event waits `ms` for an image that then fails (404), and that image: a capture of
 * it holds its place that long. Spread into a page server's routes.
 */
export function slowPage(ms: number, color = '#00ff00'): Record<string, string | PageHandler> {
  return {
    '/slow': solidPage(color, '', '<img src="/slow.png">'),
    '/slow.png': (_, res) => {
      setTimeout(() => res.writeHead(404).end(), ms);
    },
  };
}

/**
 * A page that is one canvas of `side` × `side` random pixels: a PNG of it does not compress, so the capture is about
 * side × side × 3 bytes (2560: about 20 MB, far more than a loopback connection buffers).
 */
export function noisePage(side: number): string {
  return `<!doctype html><html><body style="margin:0"><canvas id="c" width="${side}" height="${side}"></canvas>
<script>
  const c = document.getElementById('c').getContext('2d');
  const img = c.createImageData(${side}, ${side});
  const words = new Uint32Array(img.data.buffer);
  let x = 2463534242;
  for (let i = 0; i < words.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; words[i] = x | 0xff000000; }
  c.putImageData(img, 0, 0);
</script></body></html>`;
}

/** A loopback port nothing listens on (bound, then released): a page there fails with a refused connection. */
export async function unusedPort(): Promise<number> {
  const server = createTcpServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Headers and half a document, then nothing: the load event never fires. */
export const neverLoadingPage: PageHandler = (_, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html' });
  res.write('<!doctype html><html><body>still loading');
};
