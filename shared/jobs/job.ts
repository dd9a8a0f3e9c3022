import { randomBytes } from 'node:crypto';
import type { CreditEpoch } from '../accounts/creditLedger';

/** How long a job (and its batch, and its stored result) is kept: docs/api.md, "Async captures". */
export const JOB_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * How long after its acceptance a job still `queued` counts as stranded: its accepting function died between the
 * item's write and the message's send. Well past ITEM_WRITE_WINDOW_MS (runJob.ts, 90 s), when that function has
 * surely stopped, with room for a message in a queue's backlog to reach a worker first (a backlog longer than this
 * gets a second message for its unstarted jobs).
 */
export const STRANDED_AFTER_MS = 15 * 60 * 1000;
/** How long the `url` of a job's result is valid from the GET that shows it. */
export const RESULT_LINK_SECONDS = 60 * 60;

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed';
export type WebhookStatus = 'pending' | 'delivered' | 'failed';

/** The outcome of a job's webhook, as GET /api/jobs/{id} shows it. */
export interface WebhookOutcome {
  url: string;
  status: WebhookStatus;
  attempts: number;
  lastStatus: number | null;
}

/** What a succeeded job keeps of its image: enough to answer the `response: "json"` body with a fresh link. */
export interface StoredResult {
  key: string;
  contentType: string;
  width: number | null;
  height: number | null;
  bytes: number;
  etag: string;
  creditsCharged: number;
  /** Cut at the height cap or at 100 pages; absent in results stored before it was kept (not cut, as far as told). */
  truncated?: true;
  /**
   * The page's metadata was asked for and is stored beside the image (ImageStore.pageMetadata), as a cached capture's
   * is, never in the item: up to 16 KiB (metadataBudget.ts) the job's every read and write would pay for.
   */
  metadataStored?: true;
}

/** One async capture, as the table keeps it. */
export interface Job {
  id: string;
  accountId: string;
  keyId: string;
  status: JobStatus;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /**
   * The request's fields as submitted (validated again when the job runs: DNS may have changed since), when they are
   * small; a larger request (an `html` document of up to 256 KiB) is kept apart (JobStore.request), so that the
   * job's views and lists read small items.
   */
  request?: Record<string, unknown>;
  /** The page's host for the usage record (`requestHost`), so that ending a job needs no read of its request. */
  host?: string;
  /** The credits reserved at acceptance: kept on success, given back on failure. */
  cost: number;
  /** The balance's epoch they were reserved in (CreditEpoch): a balance set since gets none back. */
  creditEpoch?: CreditEpoch;
  result: StoredResult | null;
  /** What a synchronous capture would have answered. */
  error: { status: number; message: string } | null;
  webhook: WebhookOutcome | null;
  batchId?: string;
  /** How many times a worker started it. */
  runs: number;
  /**
   * Set by the write that ends a job `failed`, removed once its credits are back: a worker that died in between
   * leaves it for the next delivery of the job's message to finish (runJob).
   */
  refundOwed?: true;
  /** While `refundOwed`: until when (ms) the delivery that claimed the refund alone may give it (JobStore). */
  refundClaimedUntil?: number;
  /** Ended by the intake that could not accept it, which gives its credits back itself (jobIntake.ts). */
  refundedByCaller?: true;
  /**
   * While the job is `queued`: when the sweep (sweepStrandedJobs.ts) takes it for stranded, with no message left to
   * run it. Removed by the write that starts or ends the job.
   */
  sweepAt?: number;
}

/** A job as accepted, with its request. */
export interface NewJob extends Job {
  request: Record<string, unknown>;
}

export interface Batch {
  id: string;
  accountId: string;
  status: 'running' | 'completed';
  createdAt: number;
  finishedAt: number | null;
  jobIds: string[];
  /** How many of its jobs have finished. */
  finished: number;
  webhook: WebhookOutcome | null;
}

/** Ids that sort by creation time (the table lists an account's latest jobs by them), then 64 random bits. */
function sortableId(prefix: string, now: number): string {
  return `${prefix}${now.toString(36).padStart(9, '0')}${randomBytes(8).toString('hex')}`;
}

export const newJobId = (now: number) => sortableId('job_', now);
export const newBatchId = (now: number) => sortableId('bat_', now);

export const JOB_ID_PATTERN = /^job_[0-9a-z]{9}[0-9a-f]{16}$/;

/** When the job was created (ms), read from its id; undefined for an id that is not one of ours. */
export function jobCreatedAt(jobId: string): number | undefined {
  return JOB_ID_PATTERN.test(jobId) ? Number.parseInt(jobId.slice(4, 13), 36) : undefined;
}
export const BATCH_ID_PATTERN = /^bat_[0-9a-z]{9}[0-9a-f]{16}$/;

export function isFinished(status: JobStatus): boolean {
  return status === 'succeeded' || status === 'failed';
}
