import { logger } from '../logger';
import { ALARMED_LOG_MESSAGES } from '../metrics/names';
import type { UsageRecord, UsageStore } from './usageStore';

/** Port the screenshot use case hands its usage records to; it returns at once and never fails the request. */
export interface UsageRecorder {
  record(entry: UsageRecord): void;
}

/**
 * Holds records until `flush()` writes them, so no answer waits for the store: the Lambda adapter flushes once the
 * client has its answer, before the handler returns (Lambda freezes the process after that, and a write left
 * running would be lost or land in a later invocation).
 */
export class DeferredUsageRecorder implements UsageRecorder {
  private queued: UsageRecord[] = [];
  private readonly writing = new Set<Promise<void>>();

  constructor(private readonly store: Pick<UsageStore, 'add'>) {}

  record(entry: UsageRecord): void {
    this.queued.push(entry);
  }

  /** Writes every queued record and waits for all writes under way; a failed write is logged, never thrown. */
  async flush(): Promise<void> {
    const batch = this.queued;
    this.queued = [];
    for (const entry of batch) {
      const write: Promise<void> = this.store
        .add(entry)
        // The whole record is logged (it holds no secret), so an operator can add it back by hand.
        .catch((error) =>
          logger.error(ALARMED_LOG_MESSAGES.usageWriteFailures, { record: { ...entry }, error }),
        )
        .finally(() => this.writing.delete(write));
      this.writing.add(write);
    }
    await Promise.all(this.writing);
  }
}
