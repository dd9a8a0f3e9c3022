import { once } from 'node:events';
import { createServer, type RequestListener, type Server, type ServerOptions } from 'node:http';

/**
 * The local server's port on [::1] too, which browsers try first for `localhost`: held while the server runs, so
 * that no other user of the machine can serve a look-alike dashboard at http://localhost:<port> (red team). None
 * where the machine has no IPv6 loopback; a port someone else holds there stops the start, saying why.
 */
export async function holdIpv6Loopback(
  port: number,
  listener: RequestListener,
  options: ServerOptions = {},
): Promise<Server | undefined> {
  const server = createServer(options, listener);
  try {
    server.listen(port, '::1');
    await once(server, 'listening');
    return server;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT') return undefined;
    if (code === 'EADDRINUSE') {
      throw new Error(
        `Another program holds [::1]:${port}, where http://localhost:${port} leads browsers: stop it, or choose another PORT`,
      );
    }
    throw error;
  }
}
