import type { KeyIdentity } from '../keys/keyStore';
import { logger } from '../logger';
import { JobsNotAccepted, type QueueCapture, type QueuedCapture } from '../screenshot/queuedCaptures';
import { requestHost } from '../screenshot/usageOf';
import type { SecretCipher } from '../signing/secretCipher';
import {
  type Batch,
  isFinished,
  type Job,
  type NewJob,
  newBatchId,
  newJobId,
  STRANDED_AFTER_MS,
  type WebhookOutcome,
} from './job';
import { sealCredentials } from './jobCredentials';
import { jobEnded } from './jobEvents';
import type { JobQueue } from './jobQueue';
import type { JobStore } from './jobStore';

export interface JobIntakeDeps {
  jobs: JobStore;
  queue: JobQueue;
  /** Seals the requests' credentials (jobCredentials.ts). */
  cipher: SecretCipher;
  now: () => number;
}

export type AcceptJobs = (
  identity: KeyIdentity,
  captures: QueuedCapture[],
  options: { webhookUrl?: string | undefined; batch?: boolean },
) => Promise<{ jobs: Job[]; batch?: Batch }>;

/**
 * Accepted captures become jobs: written to the table (the record of what is owed) and queued, both at once. When
 * either is refused the error goes up (JobsNotAccepted), so the caller gives the credits back; the jobs end `failed` first, owing
 * nothing, so that a message or an item that went through never runs or refunds them a second time.
 */
export function jobIntake(deps: JobIntakeDeps): AcceptJobs {
  return async (identity, captures, options) => {
    const now = deps.now();
    const webhook = (url: string | undefined): WebhookOutcome | null =>
      url === undefined ? null : { url, status: 'pending', attempts: 0, lastStatus: null };
    const batch: Batch | undefined = options.batch
      ? {
          id: newBatchId(now),
          accountId: identity.accountId,
          status: 'running',
          createdAt: now,
          finishedAt: null,
          jobIds: [],
          finished: 0,
          webhook: webhook(options.webhookUrl),
        }
      : undefined;
    const accepted = captures.map((capture): NewJob => {
      const host = requestHost(() => capture.request);
      return {
        id: newJobId(now),
        accountId: identity.accountId,
        keyId: identity.keyId,
        status: 'queued',
        createdAt: now,
        startedAt: null,
        finishedAt: null,
        request: capture.request,
        ...(host === undefined ? {} : { host }),
        cost: capture.cost,
        ...(capture.creditEpoch === undefined ? {} : { creditEpoch: capture.creditEpoch }),
        result: null,
        error: null,
        // A batch's webhook is the batch's own (batch.completed), not one per job.
        webhook: batch ? null : webhook(options.webhookUrl),
        runs: 0,
        // In the item's own write: should this function die before the message is sent, the sweep finds the job.
        sweepAt: now + STRANDED_AFTER_MS,
        ...(batch ? { batchId: batch.id } : {}),
      };
    });
    // Sealed before anything is written: a cipher that fails leaves nothing behind (the caller gives back all).
    const jobs = await sealCredentials(deps.cipher, accepted);
    if (batch) batch.jobIds = jobs.map((job) => job.id);
    // Both at once, so accepting costs one round trip more than admission, not two. A message that outruns its item
    // is sent again a moment later by the worker (runJob); one whose item was never written is dropped there. A
    // function killed after the items and before the messages leaves them to the sweep (sweepStrandedJobs.ts).
    const [created, queued] = await Promise.allSettled([
      deps.jobs.create(jobs, batch),
      deps.queue.send(jobs.map((job) => ({ kind: 'capture', accountId: job.accountId, jobId: job.id }))),
    ]);
    const refused = [created, queued].find((outcome) => outcome.status === 'rejected');
    if (refused) {
      const error = refused.reason;
      logger.error(created === refused ? 'Jobs not written' : 'Jobs not queued', {
        count: jobs.length,
        error: error as Error,
      });
      // Some items and some messages may have gone through all the same. Every job that was written ends here, so
      // no message runs it; without a refund debt, as the caller gives back what they reserved. (The end is
      // conditional: for an item that was never written it does nothing.) A job a worker reached first and ended is
      // the worker's: a success keeps its credits, a failure is refunded by the worker; the caller keeps off them.
      const end = {
        status: 'failed',
        error: { status: 503, message: 'The job could not be accepted' },
        refundedByCaller: true,
      } as const;
      // The batch first: its webhook is gone before a job's end could complete it through a message that went through.
      if (batch)
        await deps.jobs
          .batchRefused(batch.accountId, batch.id, batch.jobIds, deps.now())
          .catch((failure) => logger.error('Refused batch not completed', { error: failure as Error }));
      const kept = await Promise.all(
        jobs.map(async (job): Promise<{ cost: number; taken?: Job }> => {
          const endedHere = await deps.jobs.finish(job.accountId, job.id, end, deps.now()).catch(() => false);
          if (endedHere) return { cost: 0 };
          // Not known to be ended here: its item was never written (the credits go back), this end was applied all
          // the same (a write that timed out: the job says so, and the credits go back), or it exists and is the
          // worker's to charge or refund: ended by a worker, or still queued because this end failed, and then run by
          // its message or the sweep. Giving those credits back too could refund a job twice or run it free, so a job
          // whose item cannot be read keeps its credits, for an operator to return should it never have been written.
          const stored = await deps.jobs.get(job.accountId, job.id).then(
            (found) => (found ? (found.refundedByCaller ? 'ended here' : 'stored') : 'absent'),
            () => 'unknown',
          );
          if (stored === 'absent' || stored === 'ended here') return { cost: 0 };
          if (stored === 'unknown') {
            logger.error('Job state unknown after a failed intake; its credits are kept', {
              accountId: job.accountId,
              jobId: job.id,
              cost: job.cost,
            });
            return { cost: job.cost };
          }
          return { cost: job.cost, taken: job };
        }),
      );
      const creditsKept = kept.reduce((sum, { cost }) => sum + cost, 0);
      const taken = kept.flatMap(({ taken }) => (taken ? [taken] : []));
      if (batch && taken.length > 0) {
        // A worker runs some of its jobs all the same: the batch was accepted after all, in part, and is answered so.
        // Refused instead, a retry with the same Idempotency-Key would be accepted, and those jobs run and charged
        // twice (red team). The ones ended here stay failed, their credits given back by the caller.
        const reopened = await reopenForTaken(deps, batch, taken).catch((failure: unknown) => {
          logger.error('Batch taken in part not reopened; it is answered refused', {
            error: failure as Error,
          });
          return undefined;
        });
        if (reopened) {
          const takenIds = new Set(taken.map((job) => job.id));
          const answered = jobs.map((job) => (takenIds.has(job.id) ? job : { ...job, ...end }));
          throw new BatchPartlyAccepted(error, creditsKept, taken, reopened, answered);
        }
      }
      throw new JobsNotAccepted(error, creditsKept, taken);
    }
    return batch ? { jobs, batch } : { jobs };
  };
}

/**
 * The intake failed, yet a worker had taken some of the batch's jobs before they could be ended: `batch` (reopened for
 * them) and `jobs` (the others failed) are the acceptance to answer, `creditsKept` what the taken ones keep.
 */
export class BatchPartlyAccepted extends JobsNotAccepted {
  constructor(
    reason: unknown,
    creditsKept: number,
    taken: Job[],
    readonly batch: Batch,
    readonly jobs: Job[],
  ) {
    super(reason, creditsKept, taken);
  }
}

/**
 * Reopens a refused batch for its `taken` jobs. One that a worker ended before the batch was reopened was counted,
 * and its count is now gone: it is counted again here (which completes the batch, with its webhook, if it was the
 * last). One ending later is counted by its worker.
 */
async function reopenForTaken(deps: JobIntakeDeps, batch: Batch, taken: Job[]): Promise<Batch> {
  const reopened = await deps.jobs.batchReopened(
    batch.accountId,
    batch.id,
    taken.map((job) => job.id),
    batch.webhook,
  );
  // Reopened, the batch is accepted: counting the ended ones again (and the batch.completed that may follow) is done
  // as well as it can be, never a reason to answer it refused (red team: a send that failed on the same failing queue
  // had the batch refused again, and its retry charged the taken job twice). A job not counted here leaves the batch
  // running, for its own message, delivered again, to count.
  const ended = jobEnded(deps);
  await Promise.all(
    taken.map(async (job) => {
      const stored = await deps.jobs.get(job.accountId, job.id);
      if (stored && isFinished(stored.status)) await ended(stored);
    }),
  ).catch((error: unknown) =>
    logger.error('Taken jobs of a reopened batch not all counted', {
      batchId: batch.id,
      error: error as Error,
    }),
  );
  return reopened;
}

/** The intake as the screenshot use case asks it: one capture, one queued job. */
export function queueOne(acceptJobs: AcceptJobs): QueueCapture {
  return async (identity, capture, options) => {
    let job: Pick<Job, 'id' | 'createdAt'> | undefined;
    try {
      [job] = (await acceptJobs(identity, [capture], options)).jobs;
    } catch (error) {
      // The queue's answer was lost, yet its message went through and the job is the worker's (it runs, and is
      // charged or refunded there): it was accepted after all, and is answered so. Refused instead, a retry with the
      // same Idempotency-Key would be accepted and charged a second time (red team).
      const [taken, ...more] = error instanceof JobsNotAccepted ? error.taken : [];
      if (!taken || more.length > 0) throw error;
      job = taken;
    }
    if (!job) throw new Error('The intake accepted no job');
    return { id: job.id, status: 'queued', createdAt: job.createdAt };
  };
}
