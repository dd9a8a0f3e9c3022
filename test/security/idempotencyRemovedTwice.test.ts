import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { delayCommands, loseAnswers } from '../helpers/lostAnswers';
import { throttleCommands } from '../helpers/throttledTable';

/**
 * Red team: a refused request's Idempotency-Key record is removed, and removed again when the table's answer to that
 * removal was lost (idempotentRoute.ts). Had the first removal landed, a retry of the request with the same key could
 * begin in between and be accepted: the second removal then took the retry's kept acceptance, and a third request
 * with the key was accepted and charged beside it.
 */

let service: TestLocalService;
/** Set: the next write of the account's jobs is refused, as a throttled table refuses it. */
let refuseJobs = false;
/** Set: the next removal of an Idempotency-Key record lands, and its answer is lost once `answerLost` is called. */
let loseRemovalAnswer = false;
let answerLost: () => void = () => {};
let removalHeld: Promise<void> = Promise.resolve();
let removalsTried = 0;
let removalsApplied = 0;

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '10', POWERTOOLS_METRICS_DISABLED: 'true' });
  const client = service.dynamo.client;
  throttleCommands(client, (command, input) => {
    const refuses = refuseJobs && command.startsWith('Put') && input.includes('"sk":"JOB#');
    if (refuses) refuseJobs = false;
    return refuses;
  });
  loseAnswers(client, async (command, input) => {
    if (command !== 'DeleteItemCommand' || !input.includes('"IDEMPOTENCY#')) return false;
    removalsApplied++;
    if (!loseRemovalAnswer) return false;
    loseRemovalAnswer = false;
    await removalHeld;
    return true;
  });
  delayCommands(client, (command, input) => {
    if (command === 'DeleteItemCommand' && input.includes('"IDEMPOTENCY#')) removalsTried++;
    return 0;
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

describe("a refusal's Idempotency-Key record removed again after a lost answer", () => {
  it("leaves a retry's acceptance that began in between, so the key is not accepted and charged again", async () => {
    const account = await service.newAccount();
    const send = async () => {
      const { status, body } = await service.postKeyed('/api/batches', {
        apiKey: account.apiKey,
        key: 'monthly-report-2026-11',
        body: { requests: [{ html: '<h1>one</h1>' }, { html: '<h1>two</h1>' }] },
      });
      return { status, id: body.id };
    };
    refuseJobs = true;
    loseRemovalAnswer = true;
    removalHeld = new Promise((resolve) => {
      answerLost = resolve;
    });
    const first = send();
    await expect.poll(() => removalsApplied, { timeout: 20_000 }).toBe(1);
    // The first request's record is gone: the client's retry is accepted while the first still waits on the table.
    const retry = await send();
    answerLost();
    const refused = await first;
    const third = await send();
    const balance = await service.balance(account.token);
    expect({ refused: refused.status, retry: retry.status }).toEqual({ refused: 503, retry: 202 });
    // Removed again, as before, but only what was the first request's.
    expect(removalsTried).toBe(2);
    // Before: a second batch, and 6 credits left.
    expect({ third, balance }).toEqual({ third: { status: 202, id: retry.id }, balance: 8 });
  }, 60_000);
});
