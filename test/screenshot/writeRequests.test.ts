import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { invokedRenderer } from '../../shared/wiring/screenshot';
import { type CountingRelay, startCountedHarness } from '../helpers/countingRelay';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { awayFromWindowEdge, SUITE_MARGIN_MS, SUITE_WAIT_HOOK_TIMEOUT_MS } from '../helpers/rateWindow';
import { HEADROOM_RENDERER, ReservedLambda, SHARED_RENDERER } from '../helpers/reservedLambda';
import type { ScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * DynamoDB write requests per screenshot request, end to end (admission, the slot given back, the charge of the
 * credits' reservation, the usage record and its day), counted by a relay in front of the store; each PutItem, UpdateItem, DeleteItem, TransactWriteItems or
 * BatchWriteItem is one request. The Lambda adapter writes the usage before the invocation ends, so once the answer
 * is read every write has been sent. The per-1,000 cost in docs/performance.md follows from these counts. The front
 * is configured as deployed (two renderers whose reserved concurrency is the capacity): no capacity item is written.
 */

let pages: PageServer;
let counted: Awaited<ReturnType<typeof startCountedHarness>>;
let harness: ScreenshotHarness;
let relay: CountingRelay;
let lambda: ReservedLambda;

beforeAll(async () => {
  await awayFromWindowEdge(SUITE_MARGIN_MS);
  pages = await startPageServer({ '/red': solidPage('#ff0000') });
  // As deployed: the front names its two renderers (the stack's environment) and Lambda throttles each at its
  // reserved concurrency; the renderer is built by the same wiring as the deployed front's.
  const env = {
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    RATE_LIMIT_PER_HOUR: '5',
    RENDERER_FUNCTION_NAME: SHARED_RENDERER,
    RENDERER_HEADROOM_FUNCTION_NAME: HEADROOM_RENDERER,
  };
  counted = await startCountedHarness(env, {
    renderer: (local) => {
      lambda = new ReservedLambda({ [SHARED_RENDERER]: 4, [HEADROOM_RENDERER]: 1 }, local);
      return invokedRenderer(env, lambda.client);
    },
  });
  ({ harness, relay } = counted);
}, SUITE_WAIT_HOOK_TIMEOUT_MS);

afterAll(async () => {
  await counted?.close();
  await pages?.close();
});

/** The write requests one call of `act` sends, and its status. */
async function writesOf(act: () => Promise<{ status: number }>) {
  relay.reset();
  const { status } = await act();
  return { status, writes: relay.writes };
}

describe('DynamoDB write requests per screenshot request', () => {
  it('a successful capture: at most 5 (admission, the slot back, the charge of its reservation, the usage record, its day), lastUsed riding along', async () => {
    const { apiKey } = await harness.newAccount();
    const body = { url: `${pages.origin}/red`, width: 320, height: 320 };
    // The key's first use writes its lastUsed; the second, within the minute, does not: both cost the same.
    for (const use of ['first', 'second']) {
      const { status, writes } = await writesOf(() => harness.shoot(apiKey, body));
      expect(status, use).toBe(200);
      // The last three go together, once the answer was sent.
      expect(writes.slice(0, 2), use).toEqual(['UpdateItem', 'UpdateItem']);
      expect(writes.slice(2).sort(), use).toEqual(['PutItem', 'UpdateItem', 'UpdateItem']);
    }
  });

  it('a newcomer’s capture on the headroom renderer (the shared one full): 5 as well', async () => {
    const { apiKey } = await harness.newAccount();
    lambda.reserved[SHARED_RENDERER] = 0;
    try {
      const { status, writes } = await writesOf(() =>
        harness.shoot(apiKey, { url: `${pages.origin}/red`, width: 321, height: 320 }),
      );
      expect(status).toBe(200);
      expect(writes).toHaveLength(5);
      expect(lambda.invocations.slice(-2)).toEqual([
        { functionName: SHARED_RENDERER, throttled: true },
        { functionName: HEADROOM_RENDERER, throttled: false },
      ]);
    } finally {
      lambda.reserved[SHARED_RENDERER] = 4;
    }
  });

  it('a capture refused for capacity (both renderers full): 5 (admission, the credits back with their reservation, the slot back, the usage record, its day)', async () => {
    const { accountId, apiKey } = await harness.newAccount();
    lambda.reserved[SHARED_RENDERER] = 0;
    lambda.reserved[HEADROOM_RENDERER] = 0;
    try {
      const { status, writes } = await writesOf(() =>
        harness.shoot(apiKey, { url: `${pages.origin}/red`, width: 322, height: 320 }),
      );
      expect(status).toBe(429);
      expect(writes).toHaveLength(5);
      expect(await harness.credits.balance(accountId)).toBe(100);
    } finally {
      lambda.reserved[SHARED_RENDERER] = 4;
      lambda.reserved[HEADROOM_RENDERER] = 1;
    }
  });

  it('a signed link that captures: at most 5 as well', async () => {
    const account = await harness.newAccount();
    const query = { url: `${pages.origin}/red`, width: '340', keyId: account.keyId, cache: 'false' };
    const signed = { ...query, signature: signQuery(account.signingSecret, canonicalQuery(query)) };
    const { status, writes } = await writesOf(() => harness.open(signed));
    expect(status).toBe(200);
    expect(writes).toHaveLength(5);
  });

  it('a cache hit: 3 (the rate-limit count, the usage record, its day)', async () => {
    const { apiKey } = await harness.newAccount();
    const body = { url: `${pages.origin}/red`, width: 330, height: 320, cache: true };
    expect((await harness.shoot(apiKey, body)).status).toBe(200);
    const { status, writes } = await writesOf(() => harness.shoot(apiKey, body));
    expect(status).toBe(200);
    expect(writes).toHaveLength(3);
  });

  it('a signed link answered from the cache: 2 (the usage record and its day), its budget untouched', async () => {
    const account = await harness.newAccount();
    const query = { url: `${pages.origin}/red`, width: '350', keyId: account.keyId };
    const signed = { ...query, signature: signQuery(account.signingSecret, canonicalQuery(query)) };
    expect((await harness.open(signed)).status).toBe(200);
    const { status, writes } = await writesOf(() => harness.open(signed));
    expect(status).toBe(200);
    expect(writes).toHaveLength(2);
  });

  it('refused requests: a 400 costs 3, a 402 4 and a 429 of the rate limit 3 (a write refused by its condition is a request too), a 401 none', async () => {
    const { accountId, apiKey } = await harness.newAccount();
    const body = { url: `${pages.origin}/red`, width: 320, height: 320 };
    // The key's lastUsed is written by its first use, so what follows counts only the refusals' own writes.
    expect((await harness.shoot(apiKey, { url: 'nope' })).status).toBe(400);
    const invalid = await writesOf(() => harness.shoot(apiKey, { url: 'nope' }));
    expect(invalid).toEqual({ status: 400, writes: ['UpdateItem', 'PutItem', 'UpdateItem'] });
    await harness.credits.set(accountId, 0);
    // The admission write fails its condition (nothing written), then the request is counted against its window.
    const broke = await writesOf(() => harness.shoot(apiKey, body));
    expect(broke).toEqual({ status: 402, writes: ['UpdateItem', 'UpdateItem', 'PutItem', 'UpdateItem'] });
    for (let used = 3; used < 5; used++) expect((await harness.shoot(apiKey, body)).status).toBe(402);
    const limited = await writesOf(() => harness.shoot(apiKey, body));
    expect(limited).toEqual({ status: 429, writes: ['UpdateItem', 'PutItem', 'UpdateItem'] });
    const unknown = await writesOf(() => harness.shoot('sk_live_unknown', body));
    expect(unknown).toEqual({ status: 401, writes: [] });
  });
});
