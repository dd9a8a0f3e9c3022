import type { Job } from './job';
import type { JobQueue, QueueMessage } from './jobQueue';
import type { JobStore } from './jobStore';

export type WebhookEventType = Extract<QueueMessage, { kind: 'webhook' }>['type'];

/** The first delivery of an event. Its `webhook-id` derives from its subject: a job or a batch has one event. */
export function webhookEvent(
  accountId: string,
  subjectId: string,
  type: WebhookEventType,
  timestamp: number,
): QueueMessage {
  return { kind: 'webhook', accountId, subjectId, eventId: `msg_${subjectId}`, type, timestamp, attempt: 0 };
}

/**
 * What follows the end of a job: its webhook, and the batch's count (whose last job sends batch.completed). Called
 * by the delivery whose write ended the job, and again by a later delivery of its message when the worker died in
 * between: the batch counts a job once, and a webhook sent twice carries one webhook-id, for the receiver to drop.
 */
export function jobEnded(deps: { jobs: JobStore; queue: JobQueue; now: () => number }) {
  return async (job: Job): Promise<void> => {
    if (job.webhook) {
      const type = job.status === 'succeeded' ? 'screenshot.succeeded' : 'screenshot.failed';
      await deps.queue.send([webhookEvent(job.accountId, job.id, type, deps.now())]);
    }
    if (job.batchId) {
      const completed = await deps.jobs.batchJobFinished(job.accountId, job.batchId, job.id, deps.now());
      if (completed?.webhook)
        await deps.queue.send([webhookEvent(job.accountId, completed.id, 'batch.completed', deps.now())]);
    }
  };
}
