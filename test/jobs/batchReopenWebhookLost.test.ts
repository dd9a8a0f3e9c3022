import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { loseAnswers, slowIntakeEnds } from '../helpers/lostAnswers';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhookReceiver';

/**
 * Red team (round 9): round 8 answers a batch taken in part after a lost queue answer `202` (jobIntake.ts,
 * BatchPartlyAccepted), so that a retry with its Idempotency-Key does not run and charge the taken jobs twice. But
 * reopenForTaken also COUNTS a taken job that already ended, and when that completes the batch it sends the batch's
 * `batch.completed` event on the same queue, whose answers are being lost (the very fault this path is about). That
 * send throws, reopenForTaken rejects, and the intake answers the batch refused (500 here) after all, though the batch
 * item was already reopened and completed. The refusal keeps no Idempotency-Key record: the retry with the same key and
 * body is accepted as a NEW batch, and the job the worker took is run and charged a second time (the round-8 bug,
 * back), and the first batch's completion webhook is never sent.
 *
 * Fix: shared/jobs/jobIntake.ts reopenForTaken: once batchReopened has landed, the batch is accepted whatever
 * follows; counting the ended jobs (and the webhook event) is best effort, left to a later delivery (the worker's
 * message for the job, or the sweep), never a reason to answer the batch refused.
 */

let service: TestLocalService;
let receiver: WebhookReceiver;
/** While set, every message is sent and the queue's answer lost (capture messages, then the batch's event). */
let loseQueueAnswers = false;
let slowFirstIntakeEnd: { set(on: boolean): void };

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  service = await startTestLocalService({
    FREE_CREDITS: '10',
    POWERTOOLS_METRICS_DISABLED: 'true',
    ALLOW_PRIVATE_HOSTS: receiver.hostPort,
  });
  loseAnswers(service.queue.client, (command) => loseQueueAnswers && command.startsWith('SendMessage'));
  // Long enough for a worker to take that job and finish it.
  slowFirstIntakeEnd = slowIntakeEnds(service.dynamo.client, 6_000, true);
}, 120_000);

afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

describe('a batch taken in part whose taken job ended before the intake reopened it, the queue losing answers', () => {
  it('is answered accepted, and a retry with its Idempotency-Key runs and charges nothing more', async () => {
    const account = await service.newAccount();
    const send = () =>
      service.postKeyed('/api/batches', {
        apiKey: account.apiKey,
        key: 'nightly-2026-11-27',
        body: {
          requests: [{ html: '<h1>one</h1>' }, { html: '<h1>two</h1>' }, { html: '<h1>three</h1>' }],
          webhookUrl: `${receiver.origin}/hooks`,
        },
      });
    loseQueueAnswers = true;
    slowFirstIntakeEnd.set(true);
    const first = await send();
    loseQueueAnswers = false;
    slowFirstIntakeEnd.set(false);
    const retry = await send();
    // Let whatever the retry accepted run.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const listed = (
      (await (await service.request('/api/jobs', { bearer: account.token })).json()) as { jobs: unknown[] }
    ).jobs.length;
    const spent = 10 - (await service.balance(account.token));
    // Today: 500 ("Batch taken in part not reopened; it is answered refused" in the log), then 202 for a new batch:
    // six jobs listed, four credits spent for three captures asked (the taken one charged twice).
    expect({
      first: first.status,
      retry: retry.status,
      sameBatch: retry.body.id !== undefined && retry.body.id === first.body.id,
      listed,
      spent,
    }).toEqual({ first: 202, retry: 202, sameBatch: true, listed: 3, spent: 1 });
  }, 90_000);
});
