import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDynamoClient } from '../../shared/store/dynamoClient';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * How many DynamoDB round trips a capture waits for before the renderer is asked: the service's client talks to the
 * store through a relay that counts calls, and rounds (a call that starts while none is in flight begins a new
 * sequential round; calls sent together share one).
 */
interface CountingRelay {
  endpoint: string;
  calls: number;
  rounds: number;
  reset(): void;
  close(): Promise<void>;
}

async function startCountingRelay(target: string): Promise<CountingRelay> {
  const upstream = new URL(target);
  let inFlight = 0;
  const relay: CountingRelay = {
    endpoint: '',
    calls: 0,
    rounds: 0,
    reset() {
      relay.calls = 0;
      relay.rounds = 0;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    relay.calls++;
    if (inFlight++ === 0) relay.rounds++;
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

let pages: PageServer;
let harness: ScreenshotHarness;
let relay: CountingRelay;
let serviceClient: DynamoDBClient;
let apiKey: string;

beforeAll(async () => {
  pages = await startPageServer({ '/red': solidPage('#ff0000') });
  harness = await startScreenshotHarness(
    { ALLOW_PRIVATE_HOSTS: pages.hostPort },
    {
      serviceClient: async (store) => {
        relay = await startCountingRelay(store.endpoint);
        serviceClient = createDynamoClient({
          endpoint: relay.endpoint,
          region: 'local',
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        });
        return serviceClient;
      },
    },
  );
  ({ apiKey } = await harness.newAccount());
});

afterAll(async () => {
  await harness?.close();
  serviceClient?.destroy();
  await relay?.close();
  await pages?.close();
});

describe('admission before the renderer is asked', () => {
  it('waits for at most two sequential DynamoDB round trips: the key, then every write at once', async () => {
    const seen: { calls: number; rounds: number }[] = [];
    const spy = vi.spyOn(harness.renderer, 'capture');
    spy.mockImplementation(async (...args) => {
      seen.push({ calls: relay.calls, rounds: relay.rounds });
      spy.mockRestore();
      return harness.renderer.capture(...args);
    });
    relay.reset();
    const response = await harness.shoot(apiKey, { url: `${pages.origin}/red`, width: 320, height: 320 });
    expect(response.status).toBe(200);
    expect(seen).toHaveLength(1);
    const [before] = seen;
    // The key lookup, then the rate limit, lastUsed, the capture slot and the credit reservation together.
    expect(before?.calls).toBeGreaterThanOrEqual(5);
    expect(before?.rounds).toBeLessThanOrEqual(2);
  });
});
