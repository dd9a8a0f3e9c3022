import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { throttleCommands } from '../helpers/throttledTable';

/**
 * Red team (round 5): docs/api.md 19.5 says only acceptances are kept: "a request refused (400, 402, 429, …) may be
 * sent again with its key". Powertools removes a refused request's record (the route's answer is thrown so that it
 * does); when that one delete fails (a throttled table for a moment), Powertools throws its persistence error
 * instead of the refusal: the client is answered 500, and since c3c3ce3 the record stays "being accepted" for 24
 * hours, not a function's time. A 402 whose client then buys credits and retries with its key (as the contract
 * invites) is answered 409 for a day, for a request that was never accepted nor charged.
 */

let service: TestLocalService;
/** How many more deletes of an Idempotency-Key record the table refuses, as a throttled table answers. */
let refuseDeletes = 0;
let refused = 0;

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '1', POWERTOOLS_METRICS_DISABLED: 'true' });
  throttleCommands(service.dynamo.client, (command, input) => {
    const refuses = refuseDeletes > 0 && command === 'DeleteItemCommand' && input.includes('"IDEMPOTENCY#');
    if (refuses) {
      refuseDeletes--;
      refused++;
    }
    return refuses;
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

describe('a batch refused for its credits whose Idempotency-Key record could not be removed at once', () => {
  it('is answered its refusal, and its key may be sent again', async () => {
    const account = await service.newAccount();
    const send = async () =>
      (
        await service.postKeyed('/api/batches', {
          apiKey: account.apiKey,
          key: 'weekly-report-2026-11-27',
          body: { requests: [{ html: '<h1>one</h1>' }, { html: '<h1>two</h1>' }] },
        })
      ).status;
    // One delete refused: the table is back for anything after it.
    refuseDeletes = 1;
    const first = await send();
    expect(refused).toBe(1);
    const retry = await send();
    // Today: 500, then 409 (for 24 hours).
    expect({ first, retry }).toEqual({ first: 402, retry: 402 });
  }, 60_000);
});
