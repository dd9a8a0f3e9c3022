import { deliverWebhook, type WebhookDeliveryDeps } from '../webhooks/deliverWebhook';
import { webhookRetryDelaySeconds } from '../webhooks/retrySchedule';
import type { WebhookSecrets } from '../webhooks/webhookSecrets';
import { isFinished, type WebhookOutcome } from './job';
import { type JobQueue, MAX_QUEUE_DELAY_SECONDS, type QueueMessage } from './jobQueue';
import { type JobStore, WEBHOOK_CLAIM_MS } from './jobStore';
import { batchView, type JobViewImages, jobView } from './jobView';

/**
 * Webhook attempts per worker invocation (deployed and locally), delivered side by side: the batch processor runs a
 * batch's records in parallel, and an attempt only waits on its receiver. A receiver that never answers then holds
 * one of ten places, not a worker, and SQS's fair queue sees enough in flight to tell an account that holds more
 * than its share.
 */
export const WEBHOOK_BATCH_SIZE = 10;
/**
 * How long a batch of webhook attempts is gathered once its first message is there: without it, attempts that come
 * one by one (a batch of jobs ending) would each take a worker of their own, and hanging receivers would hold them all.
 * Every delivery may start this much later.
 */
export const WEBHOOK_BATCHING_WINDOW_MS = 1_000;

export interface SendWebhookDeps {
  jobs: JobStore;
  queue: JobQueue;
  images: JobViewImages;
  secrets: Pick<WebhookSecrets, 'signingSecrets'>;
  delivery: WebhookDeliveryDeps;
  now: () => number;
  /** The backoff schedule; shortened only by tests. */
  retryDelaySeconds?: (attempt: number) => number | undefined;
}

/**
 * One attempt of a webhook event, from its queue message. `data` is the job or batch as its GET answers now. A
 * failed attempt is queued again after the schedule's delay (a delay longer than the queue's is waited out in
 * steps), with the same `webhook-id`; the outcome is written on the job or batch.
 */
export function sendWebhook(deps: SendWebhookDeps) {
  const retryDelay = deps.retryDelaySeconds ?? webhookRetryDelaySeconds;
  return async (message: Extract<QueueMessage, { kind: 'webhook' }>): Promise<void> => {
    const now = deps.now();
    if (message.notBefore !== undefined && message.notBefore > now) {
      await deps.queue.send([message], Math.min(MAX_QUEUE_DELAY_SECONDS, (message.notBefore - now) / 1000));
      return;
    }
    const subject = await subjectOf(message.accountId, message.subjectId);
    const webhook = subject?.webhook;
    // Gone (expired), not ended yet (a message no one of ours sent), or settled.
    if (!subject || !webhook || webhook.status !== 'pending') return;
    const { accountId, subjectId } = message;
    if (webhook.attempts > message.attempt) {
      // This attempt was made by another delivery of the message. If it was the latest one and the next is not
      // noted queued, the worker that made it may have died before it queued it: queue it once, when that worker's
      // claim ran out (before, it may still be queueing it: look again then).
      if (webhook.attempts !== message.attempt + 1) return;
      const requeue = await deps.jobs.claimWebhookRequeue(accountId, subjectId, webhook.attempts, now);
      if (requeue === 'busy') await lookAgainLater(message);
      // Noted only once sent: a send that fails leaves the next copy to claim it again (red team, round 14).
      if (requeue === 'claimed') await queueNoted(message, webhook.attempts);
      return;
    }
    // One delivery of the message makes the attempt: a copy that comes meanwhile (SQS delivers at least once) looks
    // again once this claim runs out, and then finds the attempt made (red team, round 13: twins made every later
    // attempt twice).
    const claim = await deps.jobs.claimWebhookAttempt(accountId, subjectId, message.attempt, now);
    if (claim === 'busy') await lookAgainLater(message);
    if (claim !== 'claimed') return;
    const secrets = await deps.secrets.signingSecrets(message.accountId, now);
    const answer = await deliverWebhook(
      {
        url: webhook.url,
        // Both from the subject, never from the message: the queue's word is not the service's.
        id: `msg_${message.subjectId}`,
        type: subject.type,
        timestamp: message.timestamp,
        data: subject.data,
      },
      secrets,
      deps.delivery,
    );
    const attempts = message.attempt + 1;
    const delay = answer.delivered ? undefined : retryDelay(attempts);
    const outcome: WebhookOutcome = {
      url: webhook.url,
      status: answer.delivered ? 'delivered' : delay === undefined ? 'failed' : 'pending',
      attempts,
      lastStatus: answer.status,
    };
    await deps.jobs.setWebhook(accountId, subjectId, outcome);
    if (outcome.status === 'pending') await queueNoted(message, attempts);
  };

  /** Queues the attempt after `attempts` failed ones, then notes it queued. */
  async function queueNoted(message: Extract<QueueMessage, { kind: 'webhook' }>, attempts: number) {
    await queueNext(message, attempts);
    await deps.jobs.webhookAttemptQueued(message.accountId, message.subjectId, attempts);
  }

  /** The same message again once a claim taken now has surely run out. */
  async function lookAgainLater(message: Extract<QueueMessage, { kind: 'webhook' }>) {
    const notBefore = deps.now() + WEBHOOK_CLAIM_MS;
    await deps.queue.send(
      [{ ...message, notBefore }],
      Math.min(MAX_QUEUE_DELAY_SECONDS, WEBHOOK_CLAIM_MS / 1000),
    );
  }

  /** The attempt after `attempts` failed ones, after the schedule's delay. */
  async function queueNext(message: Extract<QueueMessage, { kind: 'webhook' }>, attempts: number) {
    const delay = retryDelay(attempts);
    if (delay === undefined) return;
    const next = { ...message, attempt: attempts, notBefore: deps.now() + delay * 1000 };
    await deps.queue.send([next], Math.min(MAX_QUEUE_DELAY_SECONDS, delay));
  }

  async function subjectOf(accountId: string, subjectId: string) {
    const now = deps.now();
    if (subjectId.startsWith('bat_')) {
      const batch = await deps.jobs.getBatch(accountId, subjectId);
      if (!batch) return undefined;
      if (batch.status !== 'completed') return undefined;
      const jobs = await deps.jobs.getMany(accountId, batch.jobIds);
      const data = await batchView(batch, jobs, deps.images, now);
      return { webhook: batch.webhook, type: 'batch.completed' as const, data };
    }
    const job = await deps.jobs.get(accountId, subjectId);
    if (!job || !isFinished(job.status)) return undefined;
    const type = job.status === 'succeeded' ? 'screenshot.succeeded' : 'screenshot.failed';
    return { webhook: job.webhook, type, data: await jobView(job, deps.images, now) };
  }
}
