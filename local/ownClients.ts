import type { IncomingMessage } from 'node:http';

/**
 * Whether a request to one of our loopback services comes from our own code, which names `127.0.0.1:<port>` itself
 * and sends no Origin. A page in the developer's browser does one or the other: with its name rebound to 127.0.0.1 it
 * sends its own host, and posting to this address directly (a form or a no-cors fetch, no preflight) it names its
 * origin, as a browser does on every cross-origin POST.
 */
export function fromOwnClient(req: IncomingMessage, port: number): boolean {
  return req.headers.host === `127.0.0.1:${port}` && req.headers.origin === undefined;
}
