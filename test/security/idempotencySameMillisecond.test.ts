import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * Red team (round 10, fixed): shared/store/idempotencyRecords.ts _putRecord now takes a conditional failure whose standing
 * record carries this request's in-progress expiry for this request's own write (a write the SDK sent again after a
 * lost answer). But the in-progress expiry is only `Date.now() + 24 h` (idempotentRoute.ts registers a constant
 * remaining time), to the millisecond: two requests with one Idempotency-Key whose records are written in the same
 * millisecond (a client sending its request and its retry at once, two Lambdas, two connections of one client) carry
 * the same value. The second one's write fails on the first one's record, finds "its own" expiry there, and is taken
 * for its own write: both run the route, both are accepted, both are charged.
 *
 * The same millisecond is pinned here (Date.now as seen by Powertools' saveInProgress only); it happens without
 * help whenever the two writes are computed within one millisecond.
 */

let service: TestLocalService;
let pinned: number | undefined;
const realNow = Date.now.bind(Date);

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '10', POWERTOOLS_METRICS_DISABLED: 'true' });
}, 120_000);

afterAll(async () => {
  vi.restoreAllMocks();
  await service?.close();
});

describe('two requests with one Idempotency-Key whose records are written in the same millisecond', () => {
  it('accepts and charges only one of them', async () => {
    const account = await service.newAccount();
    pinned = realNow();
    vi.spyOn(Date, 'now').mockImplementation(() =>
      pinned !== undefined && new Error().stack?.includes('saveInProgress') ? pinned : realNow(),
    );
    const send = () =>
      service.postKeyed('/api/batches', {
        apiKey: account.apiKey,
        key: 'nightly-2026-11-27',
        body: { requests: [{ html: '<h1>one</h1>' }, { html: '<h1>two</h1>' }] },
      });
    const answers = await Promise.all([send(), send()]);
    pinned = undefined;
    const batchIds = new Set(
      answers.filter((answer) => answer.status === 202).map((answer) => JSON.stringify(answer.body)),
    );
    const balance = await service.balance(account.token);
    // One acceptance (the other 409, or the same batch replayed), two credits spent. Today: two batches, 4 credits.
    expect({ batches: batchIds.size, spent: 10 - balance }).toEqual({ batches: 1, spent: 2 });
  }, 60_000);
});
