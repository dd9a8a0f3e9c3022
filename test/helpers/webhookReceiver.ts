import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request a receiver got: header names in lower case, the body as text. */
export interface ReceivedWebhook {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * A webhook receiver on 127.0.0.1 that records what reaches it. `answer` decides each response (200 by default); it
 * may leave the response unanswered to play a slow receiver. `connections` counts TCP connections, so "zero" proves
 * nothing was even connected.
 */
export interface WebhookReceiver {
  /** http://127.0.0.1:<port> */
  origin: string;
  port: number;
  /** 127.0.0.1:<port>, as ALLOW_PRIVATE_HOSTS names it. */
  hostPort: string;
  readonly received: ReceivedWebhook[];
  readonly connections: number;
  close(): Promise<void>;
}

export type WebhookAnswer = (request: ReceivedWebhook, response: ServerResponse) => void;

const answerOk: WebhookAnswer = (_request, response) => response.writeHead(204).end();

export async function startWebhookReceiver(answer: WebhookAnswer = answerOk): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request: ReceivedWebhook = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: Object.fromEntries(
        Object.entries(req.headers).map(([name, value]) => [name, String(value ?? '')]),
      ),
      body: Buffer.concat(chunks).toString('utf8'),
    };
    received.push(request);
    answer(request, res);
  });
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    hostPort: `127.0.0.1:${port}`,
    received,
    get connections() {
      return connections;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
