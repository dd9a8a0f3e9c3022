import { logger } from '../logger';
import { jobCreatedAt, STRANDED_AFTER_MS } from './job';
import type { JobQueue } from './jobQueue';
import { type JobStore, SWEEP_SHARDS, type SweepEntry } from './jobStore';

/** How many due entries one run reads of each shard (keys only, oldest first). */
export const SWEEP_READ_LIMIT = 1_000;
/** How many jobs one run queues again from each shard. */
export const SWEEP_SEND_LIMIT = 100;
/** How many of one account's jobs one run queues again from each shard: one account cannot fill a run. */
export const SWEEP_PER_ACCOUNT = 10;
/** How often the sweep runs (the scheduled function deployed, an interval under `npm start`). */
export const SWEEP_PERIOD_MS = 5 * 60 * 1000;

export interface SweepDeps {
  jobs: Pick<JobStore, 'dueForSweep' | 'moveSweep'>;
  queue: JobQueue;
  now: () => number;
}

/**
 * Finds queued jobs that no message will run (their accepting function died between the item's write and the
 * message's send) and sends their messages again. The worker takes a message for a job as it takes any copy: it
 * runs the job once (its start and end are conditional writes), charged once. Each job is first claimed by moving
 * its sweep time on, conditionally, so two sweeps at once queue it once, and a job is queued again at most once per
 * nextSweepAt's interval. A send that fails gives the claims back for the next run, and the error goes up (a batch
 * of ten that went through before the failure is then sent once more: a copy, which the worker takes as any).
 */
export function sweepStrandedJobs(deps: SweepDeps) {
  return async (): Promise<{ requeued: number }> => {
    const now = deps.now();
    let requeued = 0;
    const failures: unknown[] = [];
    // One shard after another: a run's writes stay within SWEEP_SEND_LIMIT at once.
    for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
      try {
        requeued += await sweepShard(shard, now);
      } catch (error) {
        failures.push(error);
      }
    }
    if (requeued > 0) logger.warn('Stranded jobs queued again', { count: requeued });
    if (failures.length > 0) throw new AggregateError(failures, `${failures.length} sweep shards failed`);
    return { requeued };
  };

  async function sweepShard(shard: number, now: number): Promise<number> {
    const due = fairShare(await deps.jobs.dueForSweep(shard, now, SWEEP_READ_LIMIT));
    const claimed = (
      await Promise.all(
        due.map(async (entry) => {
          const next = nextSweepAt(entry.jobId, now);
          const won = await deps.jobs.moveSweep(entry.accountId, entry.jobId, entry.sweepAt, next);
          return won ? { ...entry, next } : undefined;
        }),
      )
    ).filter((entry) => entry !== undefined);
    if (claimed.length === 0) return 0;
    try {
      await deps.queue.send(
        claimed.map((entry) => ({ kind: 'capture', accountId: entry.accountId, jobId: entry.jobId })),
      );
    } catch (error) {
      logger.error('Stranded jobs not queued again', { count: claimed.length, error: error as Error });
      await Promise.all(
        claimed.map((entry) =>
          deps.jobs.moveSweep(entry.accountId, entry.jobId, entry.next, entry.sweepAt).catch(() => false),
        ),
      );
      throw error;
    }
    return claimed.length;
  }
}

/**
 * The entries one run takes of a shard's due ones, oldest first: at most SWEEP_PER_ACCOUNT of any one account and
 * SWEEP_SEND_LIMIT in all, so an account with thousands of queued jobs leaves room for every other account's.
 */
export function fairShare(due: SweepEntry[]): SweepEntry[] {
  const perAccount = new Map<string, number>();
  const taken: SweepEntry[] = [];
  for (const entry of due) {
    if (taken.length >= SWEEP_SEND_LIMIT) break;
    const count = perAccount.get(entry.accountId) ?? 0;
    if (count >= SWEEP_PER_ACCOUNT) continue;
    perAccount.set(entry.accountId, count + 1);
    taken.push(entry);
  }
  return taken;
}

/**
 * When a job queued again now is looked at next, if it is still queued then: after STRANDED_AFTER_MS at least, and
 * after half its age when that is longer. A job that stays queued with its messages alive (a queue's backlog) is thus
 * sent again at most once per interval, and at most about twenty times in its seven days, however long it waits.
 */
export function nextSweepAt(jobId: string, now: number): number {
  const age = now - (jobCreatedAt(jobId) ?? now);
  return now + Math.max(STRANDED_AFTER_MS, Math.floor(age / 2));
}
