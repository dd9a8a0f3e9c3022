import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { localDynamoClient } from '../../local/embeddedDynamo';
import { type HarnessOptions, startScreenshotHarness } from './screenshotHarness';

/** DynamoDB operations that write, each one billed request whatever it holds. */
const WRITE_OPERATIONS = new Set([
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'TransactWriteItems',
  'BatchWriteItem',
]);

/**
 * A relay between a DynamoDB client and the store that counts what passes: calls, sequential rounds (a call that
 * starts while none is in flight begins a new round; calls sent together share one), and write requests by
 * operation (the `X-Amz-Target` header names it).
 */
export interface CountingRelay {
  endpoint: string;
  calls: number;
  rounds: number;
  /** Write operations in the order they were sent, e.g. `UpdateItem`. */
  writes: string[];
  reset(): void;
  close(): Promise<void>;
}

export async function startCountingRelay(target: string): Promise<CountingRelay> {
  const upstream = new URL(target);
  let inFlight = 0;
  const relay: CountingRelay = {
    endpoint: '',
    calls: 0,
    rounds: 0,
    writes: [],
    reset() {
      relay.calls = 0;
      relay.rounds = 0;
      relay.writes = [];
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    relay.calls++;
    if (inFlight++ === 0) relay.rounds++;
    const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
    if (WRITE_OPERATIONS.has(operation)) relay.writes.push(operation);
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 500, answer.headers);
        answer.pipe(res);
        answer.once('end', () => inFlight--);
      },
    );
    forwarded.once('error', () => {
      inFlight--;
      res.destroy();
    });
    req.pipe(forwarded);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  relay.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return relay;
}

/**
 * A screenshot harness whose service talks to the store through a counting relay (the harness's own setup calls go
 * straight to the store).
 */
export async function startCountedHarness(
  env: Record<string, string>,
  options: Omit<HarnessOptions, 'serviceClient'> = {},
) {
  let relay: CountingRelay | undefined;
  let client: DynamoDBClient | undefined;
  const harness = await startScreenshotHarness(env, {
    ...options,
    serviceClient: async (store) => {
      relay = await startCountingRelay(store.endpoint);
      client = localDynamoClient(relay.endpoint, store.credentials);
      return client;
    },
  });
  if (!relay || !client) throw new Error('the harness did not ask for a service client');
  const [counted, serviceClient] = [relay, client];
  return {
    harness,
    relay: counted,
    async close() {
      await harness.close();
      serviceClient.destroy();
      await counted.close();
    },
  };
}
