import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { loseAnswers } from '../helpers/lostAnswers';

/**
 * Red team (round 9, fixed): docs/api.md 19.5: only acceptances are kept, "a request refused (400, 402, 429, …) may be sent
 * again with its key". Round 8 made a request remove only the record it wrote, known before the write "so a write
 * that lands though its answer is lost is still this request's" (idempotencyRecords.ts). Yet when the answer of that
 * very write (Powertools' in-progress PutItem) is lost, the route never runs, nothing is accepted nor charged, the
 * client is answered 500, and the record it wrote is left "being accepted": every retry with the key is answered
 * 409 for 24 hours, for a request the service knows it never ran.
 *
 * Worse, with the SDK's own retries (a timed-out connection is sent again): the second attempt finds the record the
 * first one wrote, Powertools takes it for another request's, and the very request that wrote it is answered 409
 * "still being accepted" without running; so is every retry, for 24 hours.
 *
 * Fix: shared/store/idempotencyRecords.ts _putRecord: a conditional failure whose existing record carries this
 * request's own in-progress expiry (#written) is this request's write, and succeeded; and shared/http/idempotentRoute.ts:
 * on IdempotencyPersistenceLayerError from saving the in-progress record (the route did not run), remove the
 * request's own record (the conditional delete, tried again as a refusal's is) before answering.
 */

let service: TestLocalService;
let loseRecordPut = false;
let lost = 0;
/** While set, the first attempt's answer of the record's PutItem is lost below the SDK's retries (a socket timeout). */
let loseFirstAttempt = false;

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '10', POWERTOOLS_METRICS_DISABLED: 'true' });
  loseAnswers(service.dynamo.client, (command, input) => {
    const loses = loseRecordPut && command === 'PutItemCommand' && input.includes('IDEMPOTENCY#');
    if (loses) {
      loseRecordPut = false;
      lost++;
    }
    return loses;
  });
  // Below the SDK's retries: the SDK sends the write again, as it does after a timed-out connection.
  loseAnswers(
    service.dynamo.client,
    (command, input) => {
      const loses = loseFirstAttempt && command === 'PutItemCommand' && input.includes('IDEMPOTENCY#');
      if (loses) {
        loseFirstAttempt = false;
        lost++;
      }
      return loses;
    },
    'retries',
  );
}, 120_000);

afterAll(async () => {
  await service?.close();
});

describe('a batch whose Idempotency-Key record was written but its answer lost', () => {
  it('was not accepted nor charged, and its key may be sent again', async () => {
    const account = await service.newAccount();
    const send = () =>
      service.postKeyed('/api/batches', {
        apiKey: account.apiKey,
        key: 'daily-2026-11-27',
        body: { requests: [{ html: '<h1>one</h1>' }, { html: '<h1>two</h1>' }] },
      });
    loseRecordPut = true;
    const first = await send();
    expect(lost).toBe(1);
    const listedAfterFirst = (
      (await (await service.request('/api/jobs', { bearer: account.token })).json()) as { jobs: unknown[] }
    ).jobs.length;
    const balanceAfterFirst = await service.balance(account.token);
    // Nothing was accepted: no job, no charge.
    expect({ status: first.status, listedAfterFirst, balanceAfterFirst }).toEqual({
      status: first.status,
      listedAfterFirst: 0,
      balanceAfterFirst: 10,
    });
    const retry = await send();
    // Today: 500, then 409 "still being accepted" (for 24 hours).
    expect({ first: first.status, retry: retry.status }).toEqual({ first: first.status, retry: 202 });
  }, 60_000);

  it('is never answered 409 for a write of its own the SDK sent again', async () => {
    const account = await service.newAccount();
    const send = () =>
      service.postKeyed('/api/batches', {
        apiKey: account.apiKey,
        key: 'hourly-2026-11-27T05',
        body: { requests: [{ html: '<h1>one</h1>' }] },
      });
    const before = lost;
    loseFirstAttempt = true;
    const first = await send();
    const retry = await send();
    expect(lost).toBe(before + 1);
    // Today: the SDK's second attempt finds the request's own record, and Powertools answers 409 "still being
    // accepted" to the very request that wrote it (nothing ran), and to every retry for 24 hours.
    expect({ first: first.status, retry: retry.status }).toEqual({ first: 202, retry: 202 });
  }, 60_000);
});
