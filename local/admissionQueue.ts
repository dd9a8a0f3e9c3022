import { type CaptureCapacity, mayStart } from '../shared/accounts/fairShare';
import { CapacityFullError, ClientGoneError, OverloadedError } from '../shared/errors';
import type { Admission } from '../shared/screenshot/admission';

interface Waiter {
  accountId: string;
  start: () => void;
  /** Ends the wait with an error: its client left, or its place went to an account that waited less. */
  refuse: (error: Error) => void;
  /** Started or refused. */
  settled: boolean;
  /**
   * The request whose place it took (one at most), held aside: refused (503) once this one starts or is refused,
   * back in the place if this one's client leaves first (red team, round 14: taking a place and hanging up turned
   * another request away for nothing).
   */
  held: Waiter[];
  /** While it is held aside: the request that sits in its place. */
  heldBy?: Waiter;
  /** A queued job's, which holds one of the local queue's pollers while it waits. */
  job?: true;
}

/**
 * Bounds the work the local server does at once, as Lambda's concurrency does in AWS, and shares it fairly between
 * accounts (docs/api.md, "Fair sharing of capture capacity"): up to `capacity.shared` tasks run for anyone, up to
 * `capacity.headroom` more only for accounts with nothing running, up to `maxWaiting` more wait, and anything
 * beyond gets OverloadedError (503) at once. When a place frees, the waiting account that runs the fewest tasks goes
 * next (the earliest of its requests first), so no account holds more than its share while others wait. The waiting
 * places are shared the same way: when they are all taken, a request of an account that waits with fewer takes the
 * place of the latest request of the account that waits with the most (which gets the 503), and a request whose
 * client left gives its place up at once (red team, round 13: one account's requests, or requests nobody waited for
 * any more, held every place and turned the others away).
 */
export class AdmissionQueue implements Admission {
  private readonly running = new Map<string, number>();
  private total = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    readonly capacity: CaptureCapacity,
    private readonly maxWaiting: number,
  ) {}

  run<T>(accountId: string, task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.enter(accountId, task, signal);
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
    return this.enter(accountId, task, undefined, true);
  }

  private async enter<T>(
    accountId: string,
    task: () => Promise<T>,
    signal: AbortSignal | undefined,
    job?: true,
  ): Promise<T> {
    if (this.mayStart(accountId)) this.take(accountId);
    // The place is taken for us by whoever frees it, so a newcomer cannot slip in between.
    else await this.wait(accountId, signal, job);
    try {
      return await task();
    } finally {
      this.free(accountId);
      this.startWaiting();
    }
  }

  private wait(accountId: string, signal: AbortSignal | undefined, job?: true): Promise<void> {
    if (signal?.aborted) return Promise.reject(new ClientGoneError());
    const displaced = this.waiting.length >= this.maxWaiting ? this.makeRoomFor(accountId) : undefined;
    if (this.waiting.length >= this.maxWaiting)
      // A job refused waits in the job queue instead (runJob).
      return Promise.reject(job ? new CapacityFullError() : new OverloadedError());
    return new Promise<void>((start, refuse) => {
      const settle = () => {
        waiter.settled = true;
        signal?.removeEventListener('abort', gone);
        for (const held of waiter.held.splice(0)) held.refuse(new OverloadedError());
      };
      const gone = () => {
        this.leave(waiter);
        waiter.refuse(new ClientGoneError());
      };
      const waiter: Waiter = {
        accountId,
        settled: false,
        held: [],
        start: () => {
          settle();
          start();
        },
        refuse: (error) => {
          if (waiter.settled) return;
          settle();
          refuse(error);
        },
        ...(job ? { job } : {}),
      };
      if (displaced) hold(waiter, displaced);
      signal?.addEventListener('abort', gone, { once: true });
      this.waiting.push(waiter);
    });
  }

  /**
   * A waiter whose client left before it started: the request it held takes its place back, or, while it was held
   * aside itself, goes to the one that sits in its place (so the places never outnumber the bound).
   */
  private leave(waiter: Waiter): void {
    const holder = waiter.heldBy;
    const held = waiter.held.splice(0);
    if (holder) {
      holder.held.splice(holder.held.indexOf(waiter), 1);
      for (const request of held) hold(holder, request);
      return;
    }
    const index = this.waiting.indexOf(waiter);
    if (index >= 0) this.waiting.splice(index, 1);
    for (const request of held) {
      request.heldBy = undefined;
      this.waiting.push(request);
    }
    // A request back in its place may start at once (its account may run nothing now).
    this.startWaiting();
  }

  /**
   * Every waiting place is taken: the latest request of the account that waits with the most gives its place up,
   * when that account waits with at least two more than `accountId` (so the two never trade a place back and forth).
   * A job is never the one to go: an account has one waiting at most, and it holds one of the pollers.
   */
  private makeRoomFor(accountId: string): Waiter | undefined {
    const counts = new Map<string, number>();
    for (const waiter of this.waiting) counts.set(waiter.accountId, (counts.get(waiter.accountId) ?? 0) + 1);
    const [most, count] = [...counts].reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0]);
    if (count < (counts.get(accountId) ?? 0) + 2) return undefined;
    const index = this.waiting.findLastIndex((waiter) => waiter.accountId === most && !waiter.job);
    return index < 0 ? undefined : this.waiting.splice(index, 1)[0];
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

/** `holder` takes the place of `request`, which waits aside until `holder` starts, is refused or leaves. */
function hold(holder: Waiter, request: Waiter): void {
  request.heldBy = holder;
  holder.held.push(request);
}
