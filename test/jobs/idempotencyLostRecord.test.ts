import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANAGEMENT_FUNCTION_TIMEOUT_MS, RESPONSE_RESERVE_MS } from '../../shared/timing';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { throttleCommands } from '../helpers/throttledTable';

/**
 * Red team (round 4, jobs): an Idempotency-Key exists so that a client may retry an acceptance it is not sure of
 * (docs/api.md 19.5: the same key and body answer the first acceptance again, "no new charge"). Powertools writes the
 * answer to its record after the route ran; when that one write fails (a throttled or unreachable table for a
 * moment), the batch is already written, queued and charged, yet the client is answered an error, and the record
 * stays "in progress" until the function's time is over. The client's retry with the same key and body is then
 * answered 409, and after that accepted as a new batch: the account pays for the batch twice, and two run.
 */

let service: TestLocalService;
/** While set, the table refuses the write that stores an Idempotency-Key's answer (Powertools' saveSuccess). */
let refuseAnswerRecord = false;
let refused = 0;

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '10', POWERTOOLS_METRICS_DISABLED: 'true' });
  // The service's own DynamoDB client (the routes share it): the one write that completes an idempotency record fails
  // as a throttled table answers, after the SDK's own retries. Every other call goes to dynalite as ever.
  throttleCommands(service.dynamo.client, (command, input) => {
    const refuses =
      refuseAnswerRecord &&
      command === 'UpdateItemCommand' &&
      input.includes('"IDEMPOTENCY#') &&
      input.includes('COMPLETED');
    if (refuses) refused++;
    return refuses;
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

describe('a batch whose Idempotency-Key answer could not be recorded', () => {
  it('is not accepted, and charged, a second time when the client retries with the same key and body', async () => {
    const account = await service.newAccount();
    const body = { requests: [{ html: '<h1>one</h1>' }, { html: '<h1>two</h1>' }] };
    const send = () =>
      service.postKeyed('/api/batches', { apiKey: account.apiKey, key: 'nightly-report-2026-11-27', body });
    const balance = () => service.balance(account.token);

    refuseAnswerRecord = true;
    const first = await send();
    refuseAnswerRecord = false;
    expect(refused).toBeGreaterThan(0);
    const afterFirst = await balance();

    // The client retries as the contract invites: at once (409 while "in progress"), then once the first request can
    // no longer be running.
    const answers = [first, await send()];
    await sleep(MANAGEMENT_FUNCTION_TIMEOUT_MS + RESPONSE_RESERVE_MS + 1_500);
    answers.push(await send());

    const accepted = answers.filter((answer) => answer.status === 202).map((answer) => answer.body.id);
    const statuses = answers.map((answer) => answer.status).join(', ');
    // One batch of two captures, however the answers went (before: 500, 409, then 202 with a second batch, 4 credits).
    expect(
      new Set(accepted).size,
      `answers ${statuses}; balance after the first ${afterFirst}`,
    ).toBeLessThanOrEqual(1);
    expect(await balance(), `answers ${statuses}`).toBeGreaterThanOrEqual(8);
    // And an answer that is not an acceptance charged nothing (docs/api.md 4.4): the first was either a 202, or free.
    if (first.status !== 202) expect(afterFirst, `the first answered ${first.status}`).toBe(10);
  }, 120_000);
});
