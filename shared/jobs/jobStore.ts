import { JOB_WORKER_TIMEOUT_MS } from '../timing';
import type { Batch, Job, NewJob, StoredResult, WebhookOutcome } from './job';

/**
 * How long one delivery's claim on a failed job's refund holds (`refundClaimedUntil`): the worker's timeout. A
 * claimer sends its refund right after its claim is answered, so the refund has landed long before the claim runs
 * out, whatever became of the claimer (deployed, Lambda has stopped it by then).
 */
export const REFUND_CLAIM_MS = JOB_WORKER_TIMEOUT_MS;

/**
 * How long one delivery's claim on a webhook attempt holds (`webhookClaimedUntil`): the attempt's own 10 s, its writes
 * and the queueing of the next, with room. A copy of its message that comes meanwhile looks again after it.
 */
export const WEBHOOK_CLAIM_MS = 60_000;

/** A delivery's claim on a webhook attempt: taken, held by another delivery for now, or of no use any more. */
export type WebhookClaim = 'claimed' | 'busy' | 'over';

/** How a job ended: its stored image, or what a synchronous capture would have answered. */
export type JobEnd =
  | { status: 'succeeded'; result: StoredResult }
  | {
      status: 'failed';
      error: { status: number; message: string };
      /** The caller gives the credits back itself (a job that was never accepted): no `refundOwed`, and no webhook. */
      refundedByCaller?: true;
    };

/**
 * How many shards the queued jobs are spread over, by job id: the index's writes spread over as many partitions, and
 * the sweep reads each.
 */
export const SWEEP_SHARDS = 16;

/** A queued job whose sweep time is up (JobStore.dueForSweep). */
export interface SweepEntry {
  accountId: string;
  jobId: string;
  sweepAt: number;
}

/**
 * Port for jobs and batches (the single table deployed and locally). Every change of a job's status is a conditional
 * write, so a job is started by any number of deliveries of its message but ends once: that one end is what charges
 * or refunds it.
 */
export interface JobStore {
  /** Writes the batch, then its jobs; a failure goes up only once every write has settled (none lands later). */
  create(jobs: NewJob[], batch?: Batch): Promise<void>;
  /** The request of a job whose item does not hold it (Job.request); undefined when it was never written. */
  request(accountId: string, jobId: string): Promise<Record<string, unknown> | undefined>;
  get(accountId: string, jobId: string): Promise<Job | undefined>;
  /** The account's latest jobs, newest first. */
  latest(accountId: string, limit: number): Promise<Job[]>;
  /**
   * Marks a queued job running; with `restart`, one already running too (its worker died, or gave it back to the
   * queue). Undefined when it had already ended, or, without `restart`, is running.
   */
  start(accountId: string, jobId: string, now: number, restart: boolean): Promise<Job | undefined>;
  /**
   * Ends a job that has not ended yet; the job as it ended, or undefined when another delivery ended it first. A
   * failure owes its refund (`refundOwed`), and the ending delivery holds the claim on it (REFUND_CLAIM_MS from `now`).
   */
  finish(accountId: string, jobId: string, end: JobEnd, now: number): Promise<Job | undefined>;
  /**
   * Queued jobs of one of the SWEEP_SHARDS whose `sweepAt` is at or before `now`, the earliest first, at most `limit`.
   * Read from an index that may lag the table by a moment: moveSweep is what checks the job is still queued.
   */
  dueForSweep(shard: number, now: number, limit: number): Promise<SweepEntry[]>;
  /**
   * Moves a queued job's `sweepAt` from `from` to `to`; false when it no longer stood at `from` (another sweep or the
   * job's own message moved it) or the job is no longer queued.
   */
  moveSweep(accountId: string, jobId: string, from: number, to: number): Promise<boolean>;
  /**
   * Claims the failed job's refund for this delivery (REFUND_CLAIM_MS from `now`): true only while the refund is still
   * owed and no other delivery's claim holds at `now`.
   */
  claimRefund(accountId: string, jobId: string, now: number): Promise<boolean>;
  /** The failed job's credits are back: removes `refundOwed` and the claim. */
  refundGiven(accountId: string, jobId: string): Promise<void>;
  setWebhook(accountId: string, subjectId: string, webhook: WebhookOutcome): Promise<void>;
  /**
   * Claims attempt `attempt` of a job's or batch's pending webhook for this delivery of its message
   * (WEBHOOK_CLAIM_MS from `now`): `claimed` while no later attempt is recorded or claimed and no other delivery's
   * claim on it holds; `busy` while one does; `over` otherwise.
   */
  claimWebhookAttempt(
    accountId: string,
    subjectId: string,
    attempt: number,
    now: number,
  ): Promise<WebhookClaim>;
  /**
   * Claims the queueing of attempt `attempt`'s message again (WEBHOOK_CLAIM_MS from `now`), for a copy of the message
   * of the attempt before it: `claimed` while it is not noted queued and no delivery's claim holds (the one that
   * made that attempt may have died before it queued it), `busy` while one holds, `over` once it was noted queued or
   * the webhook moved on.
   */
  claimWebhookRequeue(
    accountId: string,
    subjectId: string,
    attempt: number,
    now: number,
  ): Promise<WebhookClaim>;
  /** Notes that the message of attempt `attempt` is queued (the note only grows). */
  webhookAttemptQueued(accountId: string, subjectId: string, attempt: number): Promise<void>;
  getBatch(accountId: string, batchId: string): Promise<Batch | undefined>;
  getMany(accountId: string, jobIds: string[]): Promise<Job[]>;
  /**
   * Completes a batch whose intake failed (answered with an error, so its id was never given): every job counted and
   * no webhook, so a message of its that went through all the same sends no batch.completed. Nothing when the batch
   * was never written.
   */
  batchRefused(accountId: string, batchId: string, jobIds: string[], now: number): Promise<void>;
  /**
   * Opens a refused batch again for the jobs a worker took before the intake could end them (it is then answered as
   * accepted): running, those jobs no longer counted, its webhook back. Fails when the batch was never written.
   */
  batchReopened(
    accountId: string,
    batchId: string,
    takenIds: string[],
    webhook: WebhookOutcome | null,
  ): Promise<Batch>;
  /**
   * Counts a finished job of the batch (counting one twice changes nothing); the batch when that was its last one,
   * and again to a later delivery while the batch's webhook has never been tried (the worker that completed it may
   * have died before it queued batch.completed).
   */
  batchJobFinished(
    accountId: string,
    batchId: string,
    jobId: string,
    now: number,
  ): Promise<Batch | undefined>;
}
