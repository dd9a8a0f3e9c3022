import type { IncomingMessage, RequestListener, Server } from 'node:http';

/** `127.0.0.1`, with a port or not: the port is not checked, so a test's relay in front of a service passes. */
const LOOPBACK_HOST = /^127\.0\.0\.1(:\d{1,5})?$/;

/**
 * Whether a request to one of our loopback services comes from our own code, which names 127.0.0.1 itself and sends
 * no Origin. A page in the developer's browser does one or the other: with its name rebound to 127.0.0.1 it sends its
 * own host, and posting to the address directly (a form or a no-cors fetch, no preflight) it names its origin, as a
 * browser does on every cross-origin POST. Any request a browser makes also carries `Sec-Fetch-Mode`, which the
 * AWS SDK never sends.
 */
export function fromOwnClient(req: IncomingMessage): boolean {
  const fromBrowser = req.headers.origin !== undefined || req.headers['sec-fetch-mode'] !== undefined;
  return LOOPBACK_HOST.test(req.headers.host ?? '') && !fromBrowser;
}

/** Puts `server`'s request listeners behind fromOwnClient: anyone else gets `403` before they see the request. */
export function serveOwnClientsOnly(server: Server): void {
  answerOnly(server, fromOwnClient);
}

/** Puts `server`'s request listeners behind `accepts`: any other request gets `403` before they see it. */
export function answerOnly(server: Server, accepts: (req: IncomingMessage) => boolean): void {
  const serve = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (req, res) => {
    if (accepts(req)) for (const listener of serve) listener(req, res);
    else res.writeHead(403).end();
  });
}
