import type { CaptureOutcome, ServiceMetrics } from '../../shared/metrics/serviceMetrics';

/** ServiceMetrics for tests: what was recorded, and what a flush would have published. */
export class InMemoryServiceMetrics implements ServiceMetrics {
  /** Recorded since the last flush. */
  pending: { captures: CaptureOutcome[]; refundFailures: number } = { captures: [], refundFailures: 0 };
  /** One entry per flush that had something to publish. */
  readonly published: { captures: CaptureOutcome[]; refundFailures: number }[] = [];

  captureFinished(outcome: CaptureOutcome): void {
    this.pending.captures.push({ ...outcome });
  }

  refundFailed(): void {
    this.pending.refundFailures += 1;
  }

  flush(): void {
    if (this.pending.captures.length === 0 && this.pending.refundFailures === 0) return;
    this.published.push(this.pending);
    this.pending = { captures: [], refundFailures: 0 };
  }
}
