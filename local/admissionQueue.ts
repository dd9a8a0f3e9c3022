import { type CaptureCapacity, mayStart } from '../shared/accounts/fairShare';
import { CapacityFullError, OverloadedError } from '../shared/errors';
import type { Admission } from '../shared/screenshot/admission';

interface Waiter {
  accountId: string;
  start: () => void;
  /** A queued job's, which holds one of the local queue's pollers while it waits. */
  job?: true;
}

/**
 * Bounds the work the local server does at once, as Lambda's concurrency does in AWS, and shares it fairly between
 * accounts (docs/api.md, "Fair sharing of capture capacity"): up to `capacity.shared` tasks run for anyone, up to
 * `capacity.headroom` more only for accounts with nothing running, up to `maxWaiting` more wait, and anything
 * beyond gets OverloadedError (503) at once. When a place frees, the waiting account that runs the fewest tasks goes
 * next (the earliest of its requests first), so no account holds more than its share while others wait.
 */
export class AdmissionQueue implements Admission {
  private readonly running = new Map<string, number>();
  private total = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    readonly capacity: CaptureCapacity,
    private readonly maxWaiting: number,
  ) {}

  async run<T>(accountId: string, task: () => Promise<T>, job?: true): Promise<T> {
    if (this.mayStart(accountId)) {
      this.take(accountId);
    } else {
      if (this.waiting.length >= this.maxWaiting) throw new OverloadedError();
      // The place is taken for us by whoever frees it, so a newcomer cannot slip in between.
      await new Promise<void>((start) => this.waiting.push({ accountId, start, ...(job ? { job } : {}) }));
    }
    try {
      return await task();
    } finally {
      this.free(accountId);
      this.startWaiting();
    }
  }

  /**
   * Runs a queued job as `run` does, except that an account's jobs wait here one at a time: another one is refused
   * at once (CapacityFullError) and waits in the job queue instead. A job waiting here holds one of the local queue's
   * few pollers, and one account's jobs could otherwise take them all, leaving another account's messages unread
   * however fair this queue is; one waiting job still starts the moment its account's turn comes.
   */
  async runJob<T>(accountId: string, task: () => Promise<T>): Promise<T> {
    if (!this.mayStart(accountId) && this.waiting.some((w) => w.job && w.accountId === accountId))
      throw new CapacityFullError();
    return this.run(accountId, task, true);
  }

  private mayStart(accountId: string): boolean {
    return mayStart(this.capacity, this.total, this.running.get(accountId) ?? 0);
  }

  private take(accountId: string): void {
    this.total++;
    this.running.set(accountId, (this.running.get(accountId) ?? 0) + 1);
  }

  private free(accountId: string): void {
    this.total--;
    const left = (this.running.get(accountId) ?? 1) - 1;
    if (left > 0) this.running.set(accountId, left);
    else this.running.delete(accountId);
  }

  /** Starts waiting tasks while there is room: each time the one whose account runs the fewest. */
  private startWaiting(): void {
    for (;;) {
      let next: number | undefined;
      for (const [index, waiter] of this.waiting.entries()) {
        if (!this.mayStart(waiter.accountId)) continue;
        const best = next === undefined ? undefined : this.waiting[next];
        if (!best || this.runningFor(waiter) < this.runningFor(best)) next = index;
      }
      if (next === undefined) return;
      const [waiter] = this.waiting.splice(next, 1) as [Waiter];
      this.take(waiter.accountId);
      waiter.start();
    }
  }

  private runningFor(waiter: Waiter): number {
    return this.running.get(waiter.accountId) ?? 0;
  }
}
