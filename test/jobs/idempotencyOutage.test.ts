import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { StoreUnavailableError } from '../../shared/errors';
import { idempotentRoute } from '../../shared/http/idempotentRoute';
import type { HttpRequest } from '../../shared/http/types';
import { jsonResponse } from '../../shared/http/types';
import type { KeyStore } from '../../shared/keys/keyStore';
import { idempotencyPartition, idempotencyRecords } from '../../shared/store/idempotencyRecords';
import { RESPONSE_RESERVE_MS } from '../../shared/timing';
import { deferred } from '../helpers/deferred';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * Idempotency-Key at its edges (Powertools' records on dynalite): while the key store is out of reach the acceptance
 * must not run unguarded, or a client's retry of an acceptance that went through would be accepted, and charged,
 * twice; and a first acceptance that has not answered is "being accepted" even past its function's time, since
 * whether it was accepted is then unknown.
 */

let store: EmbeddedDynamo;
beforeAll(async () => {
  store = await startTestStore();
});
afterAll(() => store?.close());

const request: HttpRequest = {
  method: 'POST',
  path: '/api/batches',
  headers: {
    authorization: 'Bearer sk_live_0123456789abcdef0123456789abcdef01234567',
    'idempotency-key': 'retry-1',
    'content-type': 'application/json',
  },
  query: {},
  pathParameters: {},
  body: '{"requests":[{"url":"https://a.test/"}]}',
  requestId: 'req-1',
  baseUrl: 'http://127.0.0.1',
  deadline: Date.now() + 60_000,
  signal: new AbortController().signal,
};

describe('Idempotency-Key when the key store is out of reach', () => {
  it('answers the outage, without running the route unguarded', async () => {
    let accepted = 0;
    const route = async () => {
      accepted++;
      return jsonResponse(202, { id: 'bat_1' });
    };
    const unreachable = {
      findByHash: async () => {
        throw new StoreUnavailableError();
      },
    } as unknown as KeyStore;
    const guarded = idempotentRoute(route, {
      keys: unreachable,
      records: idempotencyRecords(store.client, TEST_TABLE),
      recordPrefix: 'test',
    });
    await expect(guarded(request)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(accepted).toBe(0);
  });

  it('still leaves an unknown key to the route, which answers its own 401', async () => {
    let routed = 0;
    const route = async () => {
      routed++;
      return jsonResponse(401, { error: 'Invalid API key' });
    };
    const empty = { findByHash: async () => undefined } as unknown as KeyStore;
    const guarded = idempotentRoute(route, {
      keys: empty,
      records: idempotencyRecords(store.client, TEST_TABLE),
      recordPrefix: 'test',
    });
    expect((await guarded(request)).status).toBe(401);
    expect(routed).toBe(1);
  });
});

describe('a retry while the first request with its key is still running', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers 409 while the first has not answered, even once it can no longer be running', async () => {
    const held = deferred();
    let accepted = 0;
    const route = async () => {
      accepted++;
      if (accepted === 1) await held.promise;
      return jsonResponse(202, { id: `bat_${accepted}` });
    };
    const owner = {
      findByHash: async () => ({ accountId: 'acct-slow', keyId: 'key_1', isActive: true }),
    } as unknown as KeyStore;
    const guarded = idempotentRoute(route, {
      keys: owner,
      records: idempotencyRecords(store.client, TEST_TABLE),
      recordPrefix: 'test',
    });
    // Only the clock the records are stamped and read with moves; timers and the store run as ever.
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Date.now();
    const first = guarded({
      ...request,
      headers: { ...request.headers, 'idempotency-key': 'slow-1' },
      deadline: start + 85_000,
    });
    await vi.waitFor(() => expect(accepted).toBe(1));
    const retry = () =>
      guarded({
        ...request,
        headers: { ...request.headers, 'idempotency-key': 'slow-1' },
        deadline: Date.now() + 85_000,
      });
    // A minute and more on, the first may still be running (a local acceptance could wait that long): still 409.
    vi.setSystemTime(start + 80_000);
    expect((await retry()).status).toBe(409);
    // Past its deadline and the reserve after it, the first cannot be running any more; it may have died after its
    // acceptance, so the retry is still not accepted (for the record's 24 hours; ten minutes on here).
    vi.setSystemTime(start + 85_000 + RESPONSE_RESERVE_MS + 1_000);
    expect((await retry()).status).toBe(409);
    vi.setSystemTime(start + 10 * 60_000);
    expect((await retry()).status).toBe(409);
    expect(accepted).toBe(1);
    held.resolve();
    await first.catch(() => undefined);
  });
});

describe("an account's Idempotency-Key records", () => {
  it('live in a partition of its own, so one account never uses up the throughput of a partition others need', async () => {
    const route = async () => jsonResponse(202, { id: 'bat_own' });
    const owner = {
      findByHash: async () => ({ accountId: 'acct-own', keyId: 'key_1', isActive: true }),
    } as unknown as KeyStore;
    const guarded = idempotentRoute(route, {
      keys: owner,
      records: idempotencyRecords(store.client, TEST_TABLE),
      recordPrefix: 'test',
    });
    expect(
      (await guarded({ ...request, headers: { ...request.headers, 'idempotency-key': 'own-1' } })).status,
    ).toBe(202);
    const { Items = [] } = await store.client.send(
      new QueryCommand({
        TableName: TEST_TABLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: idempotencyPartition('acct-own') } },
      }),
    );
    expect(Items).toHaveLength(1);
    expect(idempotencyPartition('acct-own')).not.toBe(idempotencyPartition('acct-other'));
  });
});
