import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { StoreUnavailableError } from '../../shared/errors';
import { idempotentRoute } from '../../shared/http/idempotentRoute';
import type { HttpRequest } from '../../shared/http/types';
import { jsonResponse } from '../../shared/http/types';
import type { KeyStore } from '../../shared/keys/keyStore';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * Idempotency-Key while the key store is out of reach (Powertools' records on dynalite): the acceptance must not run
 * unguarded, or a client's retry of an acceptance that went through would be accepted, and charged, twice.
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
      client: store.client,
      tableName: TEST_TABLE,
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
    const guarded = idempotentRoute(route, { keys: empty, client: store.client, tableName: TEST_TABLE });
    expect((await guarded(request)).status).toBe(401);
    expect(routed).toBe(1);
  });
});
