import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { routeEvent } from '../../local/apiGatewayEvent';
import { readServiceConfig } from '../../shared/config';
import { StoreUnavailableError } from '../../shared/errors';
import { createDynamoClient } from '../../shared/store/dynamoClient';
import { createStores } from '../../shared/wiring/stores';
import { type FaultProxy, startFaultProxy } from '../helpers/faultProxy';
import { neverLoadingPage, type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';
import { TEST_TABLE } from '../helpers/store';

/** The management functions' Lambda timeout (infra): an answer after it would never reach the caller. */
const MANAGEMENT_FUNCTION_TIMEOUT_MS = 10_000;

let pages: PageServer;
let harness: ScreenshotHarness;
let proxy: FaultProxy;
let serviceClient: DynamoDBClient;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;

beforeAll(async () => {
  pages = await startPageServer({
    '/red': solidPage('#ff0000'),
    '/never-loads': neverLoadingPage,
  });
  // The service reaches DynamoDB only through the relay, so the test can take the table away and bring it back;
  // the harness's own ledger reads balances straight from the store.
  harness = await startScreenshotHarness(
    { ALLOW_PRIVATE_HOSTS: pages.hostPort },
    {
      serviceClient: async (store) => {
        proxy = await startFaultProxy(store.endpoint);
        // The deployed functions' client (and its time limits), pointed at the relay.
        serviceClient = createDynamoClient({
          endpoint: proxy.endpoint,
          region: 'local',
          credentials: store.credentials,
        });
        return serviceClient;
      },
    },
  );
  account = await harness.newAccount();
});

afterEach(() => proxy.setMode('up'));

afterAll(async () => {
  await harness?.close();
  serviceClient?.destroy();
  await proxy?.close();
  await pages?.close();
});

const capture = () => harness.shoot(account.apiKey, { url: `${pages.origin}/red`, width: 320, height: 320 });

/** Runs `call` and reports how long it took, so "no hang" is checked against a deadline, not a benchmark. */
async function timed<T>(call: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await call();
  return { result, ms: performance.now() - started };
}

// A hung call would otherwise only fail at vitest's 60 s default.
describe.each(['down', 'blackhole'] as const)(
  'the service while DynamoDB is %s',
  { timeout: 30_000 },
  (mode) => {
    it('answers the screenshot route with 503 and an { error } body, before the function would time out', async () => {
      await proxy.setMode(mode);
      const { result, ms } = await timed(capture);
      expect(result.status).toBe(503);
      expect(result.json()).toEqual({ error: expect.stringMatching(/unavailable/i) });
      expect(result.headers['Retry-After']).toBe('1');
      expect(ms).toBeLessThan(MANAGEMENT_FUNCTION_TIMEOUT_MS);
    });

    it('answers the key routes with 503 and a { message } body, before the function would time out', async () => {
      await proxy.setMode(mode);
      const { result, ms } = await timed(() => harness.manage('listKeys', { bearer: account.token }));
      expect(result.status).toBe(503);
      expect(result.body).toEqual({ message: expect.stringMatching(/unavailable/i) });
      expect(ms).toBeLessThan(MANAGEMENT_FUNCTION_TIMEOUT_MS);
    });

    it('charges nothing for the requests it refused, and serves normally once DynamoDB is back', async () => {
      const before = await harness.credits.balance(account.accountId);
      await proxy.setMode(mode);
      expect((await capture()).status).toBe(503);
      await proxy.setMode('up');
      expect(await harness.credits.balance(account.accountId)).toBe(before);

      const recovered = await capture();
      expect(recovered.status).toBe(200);
      expect(recovered.headers['X-Credits-Charged']).toBe('1');
      expect(await harness.credits.balance(account.accountId)).toBe(before - 1);
      expect((await harness.manage('listKeys', { bearer: account.token })).status).toBe(200);
    });
  },
);

describe('a capture that fails while DynamoDB goes away', () => {
  it('still answers 500 with the url and the reason, though the refund could not be written', async () => {
    const target = `${pages.origin}/never-loads`;
    const seen = pages.hits.length;
    const event = routeEvent('screenshot', {
      bearer: account.apiKey,
      body: { url: target, width: 320, height: 320 },
    });
    // Credits are reserved before the page is asked for; the table goes away while the page hangs.
    const inFlight = harness.invoke(event, 6_000);
    while (!pages.hits.slice(seen).includes('/never-loads'))
      await new Promise((resolve) => setTimeout(resolve, 20));
    await proxy.setMode('down');

    const response = await inFlight;
    expect(response.status).toBe(500);
    expect(response.json()).toEqual({ error: expect.any(String), url: target, message: expect.any(String) });
  });
});

describe('a write that DynamoDB applies but answers too late', () => {
  const timeouts = { connectionTimeout: 500, requestTimeout: 300 };
  let slowProxy: FaultProxy;
  let slowClient: DynamoDBClient;
  let stores: ReturnType<typeof createStores>;

  beforeAll(async () => {
    slowProxy = await startFaultProxy(harness.store.endpoint);
    slowProxy.slowMs = 1_000;
    await slowProxy.setMode('slow');
    // The deployed client's code with short limits, so the answer arrives well after the client gave up.
    slowClient = createDynamoClient(
      {
        endpoint: slowProxy.endpoint,
        region: 'local',
        credentials: harness.store.credentials,
      },
      timeouts,
    );
    stores = createStores(
      slowClient,
      readServiceConfig({ TABLE_NAME: TEST_TABLE, RATE_LIMIT_PER_HOUR: '100' }),
    );
  });

  afterAll(async () => {
    slowClient?.destroy();
    await slowProxy?.close();
  });

  /** Lets the held-back answers (and anything a replay would have written) land. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, slowProxy.slowMs + 500));

  it('takes the credits of a timed-out reservation once, never replaying it', async () => {
    const before = await harness.credits.balance(account.accountId);
    await expect(stores.credits.reserve(account.accountId, 1)).rejects.toBeInstanceOf(StoreUnavailableError);
    await settle();
    expect(await harness.credits.balance(account.accountId)).toBe(before - 1);
  });

  it('counts a timed-out rate-limit hit once, never replaying it', async () => {
    const identity = { accountId: `late-${Date.now()}`, keyId: 'key_late', isActive: true };
    const now = Date.now();
    const ask = { identity, budget: 'api', now, slot: 'none' } as const;
    await expect(stores.admissions.admit(ask)).rejects.toBeInstanceOf(StoreUnavailableError);
    await settle();
    const direct = createStores(
      harness.store.client,
      readServiceConfig({ TABLE_NAME: TEST_TABLE, RATE_LIMIT_PER_HOUR: '100' }),
    );
    expect((await direct.admissions.admit(ask)).rateLimit.remaining).toBe(100 - 2);
  });
});
