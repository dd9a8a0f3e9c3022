import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { loseAnswers, slowIntakeEnds } from '../helpers/lostAnswers';

/**
 * Red team: a batch whose queue messages went through while the queue's answer was lost is refused (503), and the
 * intake ends its jobs, unless a worker reached one first: that job runs and keeps its credit. The refusal kept no
 * Idempotency-Key record, so the client's retry with the same key and body was accepted as a new batch, and the job
 * the worker took ran and was charged twice. A batch taken in part is answered as accepted instead (jobIntake.ts).
 */

let service: TestLocalService;
/** While set, capture messages are sent, and the queue's answer lost. */
let loseQueueAnswer = false;
/** The intake's end of the first job it could not accept waits (a slow table): a worker takes that one. */
let slowFirstIntakeEnd: { set(on: boolean): void };

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '10', POWERTOOLS_METRICS_DISABLED: 'true' });
  loseAnswers(
    service.queue.client,
    (command, input) => loseQueueAnswer && command.startsWith('SendMessage') && input.includes('capture'),
  );
  slowFirstIntakeEnd = slowIntakeEnds(service.dynamo.client, 6_000, true);
}, 120_000);

afterAll(async () => {
  await service?.close();
});

interface BatchView {
  status: string;
  jobs: { status: string; error?: { status: number } | null }[];
}

describe('a batch whose queue answer was lost, one of its jobs taken by a worker before the intake could end it', () => {
  it('is answered accepted, runs what was taken once, and a retry with its Idempotency-Key answers the same batch', async () => {
    const account = await service.newAccount();
    const send = () =>
      service.postKeyed('/api/batches', {
        apiKey: account.apiKey,
        key: 'quarterly-2026-q4',
        body: { requests: [{ html: '<h1>one</h1>' }, { html: '<h1>two</h1>' }, { html: '<h1>three</h1>' }] },
      });
    loseQueueAnswer = true;
    slowFirstIntakeEnd.set(true);
    const first = await send();
    loseQueueAnswer = false;
    slowFirstIntakeEnd.set(false);
    const retry = await send();
    // Before: 503, then a second batch accepted (202) whose jobs ran beside the taken one.
    expect({ first: first.status, retry: retry.status, sameBatch: retry.body.id === first.body.id }).toEqual({
      first: 202,
      retry: 202,
      sameBatch: true,
    });
    const view = async () =>
      (await (
        await service.request(`/api/batches/${first.body.id}`, { bearer: account.apiKey })
      ).json()) as BatchView;
    await expect
      .poll(async () => (await view()).status, { timeout: 30_000, interval: 250 })
      .toBe('completed');
    const { jobs } = await view();
    const succeeded = jobs.filter((job) => job.status === 'succeeded').length;
    const refused = jobs.filter((job) => job.status === 'failed' && job.error?.status === 503).length;
    const listed = (
      (await (await service.request('/api/jobs', { bearer: account.token })).json()) as { jobs: unknown[] }
    ).jobs.length;
    // The taken job ran (at least the one the slow end left to the worker); the others ended refused and refunded.
    expect(succeeded).toBeGreaterThanOrEqual(1);
    expect({ jobs: succeeded + refused, listed, spent: 10 - (await service.balance(account.token)) }).toEqual(
      {
        jobs: 3,
        listed: 3,
        spent: succeeded,
      },
    );
  }, 90_000);
});
