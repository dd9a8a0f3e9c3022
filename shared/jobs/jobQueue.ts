import { z } from 'zod';

/** SQS's longest delay on a message. Longer waits (webhook backoff) are sent again until they are over. */
export const MAX_QUEUE_DELAY_SECONDS = 900;

/** What the queue carries: names only, never a request's fields (the job item holds those). */
export const queueMessage = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('capture'),
    accountId: z.string(),
    jobId: z.string(),
    /** How often a worker found no job item yet (the message is sent beside the item's write and may outrun it). */
    waited: z.number().int().min(0).optional(),
    /**
     * Sent by a worker in place of a delivery that could take the job although it is `running` (one that started it
     * and found every renderer busy, or a redelivery that found no free slot): it keeps that right. Other first
     * deliveries do not have it (runJob.ts).
     */
    resume: z.boolean().optional(),
  }),
  z.object({
    kind: z.literal('webhook'),
    accountId: z.string(),
    /** The job or batch the event is about. */
    subjectId: z.string(),
    /** When the event happened, ms. */
    timestamp: z.number(),
    /** Attempts made before this one. */
    attempt: z.number().int().min(0),
    /** Not to be tried before this (ms): a backoff longer than one queue delay. */
    notBefore: z.number().optional(),
  }),
]);

export type QueueMessage = z.infer<typeof queueMessage>;

/** Port for the job queue: SQS deployed, a real SQS API on a local port locally. */
export interface JobQueue {
  send(messages: QueueMessage[], delaySeconds?: number): Promise<void>;
}
