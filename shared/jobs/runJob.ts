import { createHash } from 'node:crypto';
import type { CaptureSlots } from '../accounts/captureSlots';
import type { RefundDeps } from '../accounts/refund';
import { slotPenaltyUntil } from '../accounts/slotPenalty';
import type { Renderer } from '../capture/renderer';
import { storedInfoOf } from '../delivery/imageDelivery';
import { type ImageStore, imageKey } from '../delivery/imageStore';
import type { UrlPolicy } from '../egress/urlPolicy';
import {
  AppError,
  CapacityFullError,
  CaptureFailedError,
  CLIENT_CLOSED_REQUEST,
  statusOf,
  UnauthorizedError,
} from '../errors';
import { logger } from '../logger';
import type { Admission } from '../screenshot/admission';
import { specOf } from '../screenshot/captureScreenshot';
import type { SecretCipher } from '../signing/secretCipher';
import { SCREENSHOT_FUNCTION_TIMEOUT_MS } from '../timing';
import type { UsageRecorder } from '../usage/usageRecorder';
import { JOB_RETENTION_MS, type Job, jobCreatedAt, STRANDED_AFTER_MS, type StoredResult } from './job';
import { CredentialsNotOpenedError, openCredentials } from './jobCredentials';
import type { JobQueue } from './jobQueue';
import { type JobEnd, type JobStore, REFUND_CLAIM_MS } from './jobStore';

/** How many times a job is started before a failure of ours ends it `failed` (and refunded). */
export const MAX_JOB_RUNS = 3;
/**
 * Deliveries before SQS moves a message to the dead-letter queue (deployed and locally): the worker ends a job
 * itself after MAX_JOB_RUNS, so only a message that kills the worker every time gets there.
 */
export const MAX_RECEIVE_COUNT = MAX_JOB_RUNS + 2;
/** How long a job that found no free capture slot waits before it asks again. */
export const NO_SLOT_DELAY_SECONDS = 2;
/**
 * How long after a job's creation its item may still be written: every function that accepts jobs has stopped by its
 * own timeout, the screenshot function's being the longest. A message sent beside the item's write may outrun it (a
 * write drawn out by DynamoDB's retries), so a message that finds no item is sent again until then, and only then
 * dropped: one whose write failed was answered with an error and its credits given back.
 */
export const ITEM_WRITE_WINDOW_MS = SCREENSHOT_FUNCTION_TIMEOUT_MS;
/**
 * A job still queued this long after its acceptance ends failed and refunded instead of running: its result, kept
 * until the job's own expiry, would be gone within a day. Only a job stranded while the sweep was stopped for days
 * gets there.
 */
export const LATEST_START_MS = JOB_RETENTION_MS - 24 * 60 * 60 * 1000;

/** Whether an account's API key still works (neither revoked nor deleted). */
export type KeyActive = (accountId: string, keyId: string) => Promise<boolean>;

export interface RunJobDeps extends RefundDeps {
  jobs: JobStore;
  /** Asked before each run: a job of a key revoked or deleted since it was accepted does not run. */
  keyActive: KeyActive;
  queue: JobQueue;
  captureSlots: CaptureSlots;
  renderer: Renderer;
  urlPolicy: UrlPolicy;
  images: ImageStore;
  usage: UsageRecorder;
  /** The local capture queue (its fair share of Chromium); deployed, jobs run at once. */
  admission: Admission;
  captureBudgetMs: number;
  /** Opens the requests' sealed credentials (jobCredentials.ts). */
  cipher: SecretCipher;
  /** Called with each job that ended (webhooks, batches). */
  ended?: (job: Job) => Promise<void>;
}

/**
 * Runs one queued capture, for one delivery of its message (`receiveCount` is SQS's count of deliveries). A job
 * takes one of its account's capture slots only now; without one it is sent again a little later, never refused. It
 * ends once, by a conditional write: a success keeps the credits reserved at acceptance, a failure gives them back.
 * A failure of ours (not the page's) is thrown so the queue delivers it again, up to MAX_JOB_RUNS; after that the
 * job ends `failed`. A worker that died mid-capture leaves the job `running`: the next delivery of its message (a
 * redelivery, `receiveCount` above 1) runs it again, and nothing is charged twice because nothing is charged at the
 * end of a success. A first delivery that finds the job running leaves it to the delivery running it: that is a
 * second message for the job (the stranded-jobs sweep's, for a job that waited in a queue backlog), and the running
 * delivery's own message comes back should its worker die. A message a worker sends in place of a delivery that could
 * take the job (`resume`) may take it too.
 */
export function runJob(deps: RunJobDeps) {
  return async (
    accountId: string,
    jobId: string,
    receiveCount: number,
    waited = 0,
    resume = false,
  ): Promise<void> => {
    const job = await deps.jobs.get(accountId, jobId);
    if (!job) {
      const left = (jobCreatedAt(jobId) ?? 0) + ITEM_WRITE_WINDOW_MS - deps.now();
      // A second, then twice as long each time: few messages for an item that never comes.
      if (left > 0)
        await deps.queue.send(
          [{ kind: 'capture', accountId, jobId, waited: waited + 1 }],
          Math.min(2 ** waited, Math.ceil(left / 1000)),
        );
      else logger.warn('Queue message dropped: its job was never written', { jobId });
      return;
    }
    // Ended, yet its message came back: the worker that ended it died before it was done, or this is a copy of the
    // message (SQS delivers at least once). What follows the end is done again (idempotent). A refund still owed is
    // given only by the delivery that holds its claim (refundBack); one that cannot claim it sends itself again for
    // when any claim made by now has run out, and only then reports the end, after the credits are back. Its own
    // message is the one that survives a claimer that died: the claimer's may come back while its claim still
    // holds (locally after a few seconds), or not at all (its last delivery before the dead-letter queue).
    if (job.status === 'succeeded' || job.status === 'failed') {
      if (job.refundOwed) {
        if (!(await deps.jobs.claimRefund(accountId, jobId, deps.now()))) {
          await deps.queue.send([{ kind: 'capture', accountId, jobId }], Math.ceil(REFUND_CLAIM_MS / 1000));
          return;
        }
        await refundBack(job);
      }
      await deps.ended?.(job);
      return;
    }
    if (receiveCount > MAX_JOB_RUNS) {
      await end(job, failure(new Error('The capture kept failing')));
      return;
    }
    if (job.status === 'queued' && deps.now() > job.createdAt + LATEST_START_MS) {
      await end(job, {
        status: 'failed',
        error: { status: 503, message: 'The job could not be run in time' },
      });
      return;
    }
    // This delivery may take the job although it is running; a message it sends in its place keeps that right.
    const restart = receiveCount > 1 || resume;
    // No free slot, or (locally) no room in the capture queue now: sent again a little later, holding no worker
    // meanwhile.
    const later = async () => {
      await deps.queue.send(
        [{ kind: 'capture', accountId, jobId, ...(restart ? { resume: true } : {}) }],
        NO_SLOT_DELAY_SECONDS,
      );
      await keepFromSweep(job);
    };
    const admitted = deps.admission.run(accountId, async () => {
      const deadline = deps.now() + deps.captureBudgetMs;
      const lease = await deps.captureSlots.acquire(accountId, deps.now(), deadline);
      if (lease === undefined) {
        await later();
        return;
      }
      // A job that ends free because of its page costs its account the slot a while longer, as a synchronous
      // capture does (slotPenalty.ts).
      let penaltyUntil: number | undefined;
      try {
        const running = await deps.jobs.start(accountId, jobId, deps.now(), restart);
        if (!running) return;
        let result: StoredResult;
        const startedAt = deps.now();
        try {
          result = await capture(running, deadline, lease.newcomer);
        } catch (error) {
          penaltyUntil = slotPenaltyUntil(error, startedAt, deps.now(), deadline);
          // Every renderer is busy (deployed: their reserved concurrency is full): a queued job is never refused for
          // concurrency, so it waits as for a slot.
          if (error instanceof CapacityFullError) {
            await deps.queue.send(
              [{ kind: 'capture', accountId, jobId, resume: true }],
              NO_SLOT_DELAY_SECONDS,
            );
            return;
          }
          // Ours and not yet the last try: the queue delivers it again.
          if (!isFinal(error) && receiveCount < MAX_JOB_RUNS) throw error;
          await end(running, failure(error));
          return;
        }
        await end(running, { status: 'succeeded', result });
      } finally {
        await deps.captureSlots
          .release(accountId, lease.leaseId, penaltyUntil)
          .catch((error) => logger.warn('Capture slot not released', { error }));
      }
    });
    await admitted.catch(async (error: unknown) => {
      // Refused by the admission itself (the local capture queue has no room now); a refusal inside is answered there.
      if (!(error instanceof CapacityFullError)) throw error;
      await later();
    });
  };

  /**
   * A job waiting for a slot has a live message (this one, sent again): its sweep time is moved on before the sweep
   * would take it for stranded and queue a second message, which would wait beside this one. One write per job every
   * STRANDED_AFTER_MS / 2 or so, not one per wait; a job whose message is lost is found once its time is up.
   */
  async function keepFromSweep(job: Job): Promise<void> {
    const now = deps.now();
    if (job.sweepAt === undefined || job.sweepAt - now > STRANDED_AFTER_MS / 2) return;
    await deps.jobs
      .moveSweep(job.accountId, job.id, job.sweepAt, now + STRANDED_AFTER_MS)
      .catch((error) => logger.warn('Sweep time not moved', { jobId: job.id, error: error as Error }));
  }

  async function capture(job: Job, deadline: number, newcomer: boolean): Promise<StoredResult> {
    // The owner was told a revoked key fails from the next request: a leaked key's queued jobs do not spend the
    // account's credits after it (red team, round 22). One already running finishes, as a synchronous capture does.
    if (!(await deps.keyActive(job.accountId, job.keyId))) throw new UnauthorizedError(KEY_GONE_BEFORE_RUN);
    // Checked again: what the host resolves to may have changed since the job was accepted.
    const stored = job.request ?? (await deps.jobs.request(job.accountId, job.id));
    if (!stored) throw new JobRequestLostError();
    const request = await openCredentials(deps.cipher, { ...job, request: stored });
    const { spec } = await specOf(() => ({ ...request, response: 'json' }), deps.urlPolicy);
    const output = await deps.renderer.capture(spec, { deadline, newcomer });
    const key = imageKey.job(job.accountId, job.id, job.runs);
    const captured = {
      image: output.image,
      contentType: output.contentType,
      etag: `"${createHash('md5').update(output.image).digest('hex')}"`,
      creditsCharged: job.cost,
      truncated: output.truncated,
      ...(output.metadata ? { metadata: output.metadata } : {}),
    };
    const info = storedInfoOf(captured, deps.now(), job.createdAt + JOB_RETENTION_MS);
    await deps.images.put(key, captured.image, info);
    const text = !info.contentType.startsWith('image/') && info.contentType !== 'application/pdf';
    return {
      key,
      contentType: info.contentType,
      width: text ? null : info.width,
      height: text ? null : info.height,
      bytes: info.bytes,
      etag: info.etag,
      creditsCharged: job.cost,
      ...(output.truncated ? { truncated: true as const } : {}),
      ...(info.metadata ? { metadataStored: true as const } : {}),
    };
  }

  /**
   * A failed job's credits back, once, by the delivery that holds the claim on them (the ending write's, or
   * claimRefund's), in three writes any of which a dying worker may be the last to make: the refund with its mark on
   * the account (refundOnce: a repeat gives nothing), `refundOwed` off the job (no delivery claims it again), the mark
   * off the account. Only a claimer refunds, and a claim outlasts its claimer's refund write, so no refund can land
   * once the mark is forgotten: the next claim comes after the claim before it ran out, and finds the mark still
   * there if that claimer gave the credits (it had not yet said so on the job), or nothing owed. Dying between the
   * last two leaves one stale mark on the account item. A refund the ledger refuses is not kept as a pending refund
   * (giveCreditsBack's way), which would carry no job id and could be given a second time once this one lands: the
   * job keeps owing it, and the error brings the message back, to claim it again once this claim ran out.
   */
  async function refundBack(job: Job): Promise<void> {
    try {
      await deps.credits.refundOnce(job.accountId, job.cost, job.id, job.creditEpoch);
    } catch (error) {
      deps.metrics.refundFailed();
      logger.error('Job refund failed; its message comes back', { jobId: job.id, error: error as Error });
      throw error;
    }
    await deps.jobs.refundGiven(job.accountId, job.id);
    await deps.credits
      .forgetRefund(job.accountId, job.id)
      .catch((error) => logger.warn('Refund mark not removed', { error }));
  }

  /** Ends the job once: the one write that wins refunds a failure and leaves the usage record. */
  async function end(job: Job, outcome: JobEnd): Promise<void> {
    const finishedAt = deps.now();
    const ended = await deps.jobs.finish(job.accountId, job.id, outcome, finishedAt);
    if (!ended) return;
    // Dated when the request came in, as every usage record (docs/api.md 16): the day its credits were reserved and
    // its rate window counted, not the day a queued, retried or swept job happened to end (red team, round 27).
    deps.usage.record({
      accountId: job.accountId,
      keyId: job.keyId,
      at: job.createdAt,
      status: outcome.status === 'succeeded' ? 200 : outcome.error.status,
      credits: outcome.status === 'succeeded' ? job.cost : 0,
      cacheHit: false,
      durationMs: finishedAt - job.createdAt,
      ...(job.host ? { host: job.host } : {}),
    });
    // After the usage record: a refund that fails brings the message back, which finds the job ended. The ending
    // write claimed the refund for this delivery.
    if (ended.refundOwed) await refundBack(ended);
    await deps.ended?.(ended);
  }
}

/** A job whose request is not in the table: no later run would find it either, so the job ends at once. */
class JobRequestLostError extends AppError {
  constructor() {
    super(500, "The job's request could not be read");
  }
}

/**
 * A failure the next try would meet again: the page's, the request's own (a 4xx), credentials that do not open, a
 * request that is not there.
 */
function isFinal(error: unknown): boolean {
  if (error instanceof CredentialsNotOpenedError || error instanceof JobRequestLostError) return true;
  if (error instanceof CaptureFailedError) return error.fault === 'page';
  return error instanceof AppError && error.status < 500;
}

export const KEY_GONE_BEFORE_RUN = 'The API key that submitted this job was revoked or deleted before it ran';

/** What a synchronous capture would have answered: its status and message, never internals. */
function failure(error: unknown): JobEnd {
  const status = statusOf(error);
  const message =
    error instanceof CaptureFailedError
      ? error.reason
      : error instanceof AppError
        ? error.message
        : 'Screenshot capture failed';
  return { status: 'failed', error: { status: status === CLIENT_CLOSED_REQUEST ? 500 : status, message } };
}
