import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerClientErrors } from '../../local/httpAdapter';

/**
 * The local server's answer to HTTP its parser refuses, on a connection that already carries an answer. Node's own
 * handler writes nothing into an answer under way; ours keeps each connection's open answers itself (it read Node's
 * internal `_httpMessage` before).
 */
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    if (req.url === '/slow') {
      res.write('first part;');
      setTimeout(() => res.end('last part'), 400);
    } else res.end('quick');
  });
  answerClientErrors(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** What the connection received by the time the server closed it. */
function received(socket: Socket): Promise<string> {
  let text = '';
  socket.on('data', (chunk) => {
    text += chunk;
  });
  socket.on('error', () => {});
  return once(socket, 'close').then(() => text);
}

const MALFORMED = 'FOO / HTTP/1.1\r\nHost: h\r\n\r\n';

/** What the connection received when `first` was sent, then, 100 ms later, a request the parser refuses. */
async function malformedAfter(first: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  const text = received(socket);
  socket.write(first);
  await new Promise((resolve) => setTimeout(resolve, 100));
  socket.write(MALFORMED);
  return text;
}

describe('a request the parser refuses', () => {
  it('is not answered inside an answer under way: the connection is closed', async () => {
    const answer = await malformedAfter('GET /slow HTTP/1.1\r\nHost: h\r\n\r\n');
    expect(answer).toContain('first part;');
    expect(answer).not.toContain('400 Bad Request');
    expect(answer).not.toContain('last part');
  });

  it('is answered as JSON after an answer that ended on the same connection', async () => {
    const answer = await malformedAfter('GET /quick HTTP/1.1\r\nHost: h\r\n\r\n');
    expect(answer).toContain('quick');
    expect(answer).toContain('HTTP/1.1 400 Bad Request');
    expect(answer).toContain('{"message":"Bad request"}');
  });
});
