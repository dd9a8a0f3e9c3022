import type { Job } from './job';
import type { JobQueue, QueueMessage } from './jobQueue';
import type { JobStore } from './jobStore';

/**
 * The first delivery of an event: a job or a batch has one. What it says (its `webhook-id` and type) is read from
 * the job or batch when it is sent (sendWebhook.ts), never from the message.
 */
export function webhookEvent(accountId: string, subjectId: string, timestamp: number): QueueMessage {
  return { kind: 'webhook', accountId, subjectId, timestamp, attempt: 0 };
}

/**
 * What follows the end of a job: its webhook, and the batch's count (whose last job sends batch.completed). Called
 * by the delivery whose write ended the job, and again by a later delivery of its message when the worker died in
 * between: the batch counts a job once, and a webhook sent twice carries one webhook-id, for the receiver to drop.
 */
export function jobEnded(deps: { jobs: JobStore; queue: JobQueue; now: () => number }) {
  return async (job: Job): Promise<void> => {
    if (job.webhook) await deps.queue.send([webhookEvent(job.accountId, job.id, deps.now())]);
    if (job.batchId) {
      const completed = await deps.jobs.batchJobFinished(job.accountId, job.batchId, job.id, deps.now());
      if (completed?.webhook) await deps.queue.send([webhookEvent(job.accountId, completed.id, deps.now())]);
    }
  };
}
