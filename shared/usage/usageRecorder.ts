import { AsyncLocalStorage } from 'node:async_hooks';
import { logger } from '../logger';
import { ALARMED_LOG_MESSAGES } from '../metrics/names';
import type { UsageRecord, UsageStore } from './usageStore';

/** A record, and what else waits for the same answer to be settled. */
interface Deferred {
  entry: UsageRecord;
  settled?: () => Promise<void>;
}

/** Port the screenshot use case hands its usage records to; it returns at once and never fails the request. */
export interface UsageRecorder {
  /** `settled`: what else waits for the answer to be settled (a capture's charge), run by the same flush. */
  record(entry: UsageRecord, settled?: () => Promise<void>): void;
}

/**
 * Holds records until `flush()` writes them, so no answer waits for the store: the Lambda adapter flushes once the
 * client has its answer, before the handler returns (Lambda freezes the process after that, and a write left
 * running would be lost or land in a later invocation).
 *
 * A request run `inScope` keeps its records apart: only its own flush writes them. A record may still change until
 * its answer is settled (a client that hangs up is refunded, and its record then says 0 credits), and the local
 * server answers many requests at once: another request's flush must not write it before then (red team).
 */
export class DeferredUsageRecorder implements UsageRecorder {
  /** Records made outside any request's scope (the job worker's, which flushes once per batch of messages). */
  private readonly unscoped: Deferred[] = [];
  private readonly scopes = new AsyncLocalStorage<Deferred[]>();
  private readonly writing = new Set<Promise<void>>();

  constructor(private readonly store: Pick<UsageStore, 'add'>) {}

  /** Runs one request's work with a queue of its own, which `flush()` called within it writes. */
  inScope<T>(work: () => T): T {
    return this.scopes.run([], work);
  }

  record(entry: UsageRecord, settled?: () => Promise<void>): void {
    this.queue().push(settled ? { entry, settled } : { entry });
  }

  /**
   * Writes the records queued in this scope (or outside any) and waits for all writes under way; a failed write is
   * logged, never thrown.
   */
  async flush(): Promise<void> {
    const batch = this.queue().splice(0);
    for (const { entry, settled } of batch) {
      const write: Promise<void> = Promise.all([
        this.store
          .add(entry)
          // The whole record is logged (it holds no secret), so an operator can add it back by hand.
          .catch((error) =>
            logger.error(ALARMED_LOG_MESSAGES.usageWriteFailures, { record: { ...entry }, error }),
          ),
        settled?.(),
      ])
        .then(() => undefined)
        .finally(() => this.writing.delete(write));
      this.writing.add(write);
    }
    await Promise.all(this.writing);
  }

  private queue(): Deferred[] {
    return this.scopes.getStore() ?? this.unscoped;
  }
}
