import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { loseAnswers, slowIntakeEnds } from '../helpers/lostAnswers';

/**
 * Red team (round 5), theoretical made concrete: an async capture whose queue message went through while the queue's
 * answer was lost (a timeout) is refused (500 here, 503 "The job could not be accepted" when the queue says it failed). The intake then ends its job, unless a
 * worker reached it first: that job runs, succeeds and keeps its credit (jobIntake.ts). The 503 is not an acceptance,
 * so the Idempotency-Key record is removed, and the client's retry with the same key and body, as the contract
 * invites for a refusal, is accepted and charged again: one key, two captures run, two credits, for a request whose
 * first answer said it was not accepted.
 */

let service: TestLocalService;
/** While set, a capture message is sent, and its answer lost. */
let loseQueueAnswer = false;
/** While set, the intake's end of a job it could not accept waits (a slow table), so the worker gets there first. */
let slowIntakeEnd: { set(on: boolean): void };

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '10', POWERTOOLS_METRICS_DISABLED: 'true' });
  loseAnswers(
    service.queue.client,
    (command, input) => loseQueueAnswer && command.startsWith('SendMessage') && input.includes('capture'),
  );
  slowIntakeEnd = slowIntakeEnds(service.dynamo.client, 8_000, false);
}, 120_000);

afterAll(async () => {
  await service?.close();
});

describe('an async capture refused 503 whose job a worker ran all the same', () => {
  it('is not run and charged a second time by a retry with the same Idempotency-Key', async () => {
    const account = await service.newAccount();
    const send = () =>
      service.postKeyed('/api/screenshot', {
        apiKey: account.apiKey,
        key: 'invoice-4711',
        body: { html: '<h1>Invoice 4711</h1>', async: true },
      });

    loseQueueAnswer = true;
    slowIntakeEnd.set(true);
    const first = await send();
    loseQueueAnswer = false;
    slowIntakeEnd.set(false);
    const retry = await send();
    // Both captures (if two were accepted) have time to run.
    await sleep(8_000);
    const jobs = (
      (await (await service.request('/api/jobs', { bearer: account.token })).json()) as {
        jobs: { id: string; status: string }[];
      }
    ).jobs;
    const succeeded = jobs.filter((job) => job.status === 'succeeded').length;
    // Today: 500 then 202; two jobs succeeded and 2 credits spent for one key.
    expect(
      { succeeded, spent: 10 - (await service.balance(account.token)) },
      `answers ${first.status}, ${retry.status}; jobs ${JSON.stringify(jobs)}`,
    ).toEqual({ succeeded: 1, spent: 1 });
  }, 120_000);
});
