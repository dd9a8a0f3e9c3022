import type { SlotPool } from '../shared/accounts/captureSlots';
import { type CaptureCapacity, mayStart } from '../shared/accounts/fairShare';
import { CapacityFullError, ClientGoneError, OverloadedError } from '../shared/errors';
import type { Admission } from '../shared/screenshot/admission';

/**
 * How many queued jobs, of all accounts, may wait in the queue at once (runJob): one is enough to take the next place
 * that frees, and each holds a place of the job poller.
 */
const WAITING_JOBS = 1;

/** What a request is, beyond its account. */
type Kind = Pick<Waiter, 'job' | 'link'>;

interface Waiter {
  accountId: string;
  /** Its place in the order of arrival: the queue and the requests set aside keep to it. */
  seq: number;
  start: () => void;
  /** Ends the wait with an error: its client left, or no place was left for it. */
  refuse: (error: Error) => void;
  /** A queued job's, which holds one of the local queue's pollers while it waits. */
  job?: true;
  /** A signed link's, which may not take the account's last shared place nor keep its own key's request waiting. */
  link?: true;
}

/**
 * Bounds the work the local server does at once, as Lambda's concurrency does in AWS, and shares it fairly between
 * accounts (docs/api.md, "Fair sharing of capture capacity"): up to `capacity.shared` tasks run for anyone, up to
 * `capacity.headroom` more only for accounts with nothing running, up to `maxWaiting` more wait, and anything
 * beyond gets OverloadedError (503) at once. When a place frees, the waiting account that runs the fewest tasks goes
 * next (the earliest of its requests first), so no account holds more than its share while others wait.
 *
 * The waiting places are shared the same way: when they are all taken, a request of an account that waits with at
 * least two fewer takes the place of the latest request of the account that waits with the most. That one is set
 * aside, and takes the first place that frees, in its order of arrival (refused 503 only when as many are set aside
 * as may wait). A request whose client left gives its place up at once. (Red team, rounds 13 to 16: one account's
 * requests, or requests nobody waited for any more, held every place; a request that took a place and hung up
 * turned another away for nothing.)
 *
 * Signed links leave their account's API keys room, as they leave them a capture slot deployed (`linkSlotLimit`):
 * an account's link requests run in all but one of the shared places (one at the least), a request with an API key
 * takes the waiting place of its own account's latest link request when no other is free, and starts before the link
 * requests that wait with it. (Red team, round 17: a leaked link's visitors, answered free from the cache, held every
 * place of the account, and its owner's own request was refused `503`.)
 */
export class AdmissionQueue implements Admission {
  private readonly running = new Map<string, number>();
  /** Of `running`, the signed links' requests. */
  private readonly linksRunning = new Map<string, number>();
  private total = 0;
  /** In order of arrival. */
  private readonly waiting: Waiter[] = [];
  /** Requests whose places were taken, in order of arrival: back in the queue as places free. */
  private readonly aside: Waiter[] = [];
  private arrivals = 0;

  constructor(
    readonly capacity: CaptureCapacity,
    private readonly maxWaiting: number,
  ) {}

  run<T>(
    accountId: string,
    task: (waited: boolean) => Promise<T>,
    signal?: AbortSignal,
    pool: SlotPool = 'api',
  ): Promise<T> {
    return this.enter(accountId, task, signal, pool === 'signedLink' ? { link: true } : {});
  }

  /**
   * How many places the local job poller has: a place for every job that may run or wait here, and one more, so that
   * whatever the jobs here hold, another account's message is still read and may start on the headroom.
   */
  get pollerPlaces(): number {
    return this.capacity.shared + this.capacity.headroom + WAITING_JOBS + 1;
  }

  /**
   * Runs a queued job as `run` does, except that only WAITING_JOBS jobs, of all accounts, wait here at once: another
   * that may not start now is refused at once (CapacityFullError) and waits in the job queue instead, unless its
   * account runs fewer than a waiting job's, which then goes back there in its stead (the fair order would start it
   * later). A job waiting here holds one of the local queue's few pollers: one per account let a few accounts' batches
   * hold them all, and a newcomer's message went unread for a whole capture (red team, round 20). A waiting job
   * still starts the moment its account's turn comes.
   */
  async runJob<T>(accountId: string, task: (waited: boolean) => Promise<T>): Promise<T> {
    if (!this.mayStart(accountId)) {
      const jobs = this.waiting.filter((waiter) => waiter.job);
      if (jobs.length >= WAITING_JOBS) {
        const runs = this.running.get(accountId) ?? 0;
        const busiest = jobs.reduce((a, b) => (this.runningFor(b) > this.runningFor(a) ? b : a));
        if (this.runningFor(busiest) <= runs) throw new CapacityFullError();
        remove(this.waiting, busiest);
        busiest.refuse(new CapacityFullError());
      }
    }
    return this.enter(accountId, task, undefined, { job: true });
  }

  private async enter<T>(
    accountId: string,
    task: (waited: boolean) => Promise<T>,
    signal: AbortSignal | undefined,
    kind: Kind,
  ): Promise<T> {
    const waited = !this.mayStart(accountId, kind.link);
    if (!waited) this.take(accountId, kind.link);
    // The place is taken for us by whoever frees it, so a newcomer cannot slip in between.
    else await this.wait(accountId, signal, kind);
    try {
      return await task(waited);
    } finally {
      this.free(accountId, kind.link);
      this.startWaiting();
    }
  }

  private wait(accountId: string, signal: AbortSignal | undefined, kind: Kind): Promise<void> {
    if (signal?.aborted) return Promise.reject(new ClientGoneError());
    if (this.waiting.length >= this.maxWaiting && !this.makeRoomFor(accountId, kind))
      // A job refused waits in the job queue instead (runJob).
      return Promise.reject(kind.job ? new CapacityFullError() : new OverloadedError());
    return new Promise<void>((start, refuse) => {
      const gone = () => {
        const left = remove(this.waiting, waiter);
        remove(this.aside, waiter);
        waiter.refuse(new ClientGoneError());
        if (left) this.startWaiting();
      };
      const waiter: Waiter = {
        accountId,
        seq: this.arrivals++,
        start: () => {
          signal?.removeEventListener('abort', gone);
          start();
        },
        refuse: (error) => {
          signal?.removeEventListener('abort', gone);
          refuse(error);
        },
        ...kind,
      };
      signal?.addEventListener('abort', gone, { once: true });
      this.waiting.push(waiter);
    });
  }

  /**
   * Every waiting place is taken: the latest request of the account that waits with the most is set aside, when that
   * account waits with at least two more than `accountId` (so the two never trade a place back and forth); else,
   * for a request with an API key, its own account's latest link request. A job is never the one to go: few wait
   * (WAITING_JOBS), and each holds one of the pollers.
   */
  private makeRoomFor(accountId: string, kind: Kind): boolean {
    const counts = new Map<string, number>();
    for (const waiter of this.waiting) counts.set(waiter.accountId, (counts.get(waiter.accountId) ?? 0) + 1);
    const [most, count] = [...counts].reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0]);
    const another = count >= (counts.get(accountId) ?? 0) + 2;
    const index = another
      ? this.waiting.findLastIndex((waiter) => waiter.accountId === most && !waiter.job)
      : kind.link || kind.job
        ? -1
        : this.waiting.findLastIndex((waiter) => waiter.accountId === accountId && waiter.link);
    if (index < 0) return false;
    const [displaced] = this.waiting.splice(index, 1) as [Waiter];
    if (this.aside.length >= this.maxWaiting) displaced.refuse(new OverloadedError());
    else inArrivalOrder(this.aside, displaced);
    return true;
  }

  /** Whether a request of the account (a link's, when `link`) may start now. */
  private mayStart(accountId: string, link?: true): boolean {
    return (
      mayStart(this.capacity, this.total, this.running.get(accountId) ?? 0) &&
      (!link || (this.linksRunning.get(accountId) ?? 0) < Math.max(1, this.capacity.shared - 1))
    );
  }

  private take(accountId: string, link?: true): void {
    this.total++;
    count(this.running, accountId, 1);
    if (link) count(this.linksRunning, accountId, 1);
  }

  private free(accountId: string, link?: true): void {
    this.total--;
    count(this.running, accountId, -1);
    if (link) count(this.linksRunning, accountId, -1);
  }

  /**
   * Gives the places that freed to the requests set aside, then starts waiting tasks while there is room: each time
   * the one whose account runs the fewest.
   */
  private startWaiting(): void {
    for (;;) {
      while (this.waiting.length < this.maxWaiting && this.aside.length > 0)
        inArrivalOrder(this.waiting, this.aside.shift() as Waiter);
      let next: number | undefined;
      for (const [index, waiter] of this.waiting.entries()) {
        if (!this.mayStart(waiter.accountId, waiter.link)) continue;
        const best = next === undefined ? undefined : this.waiting[next];
        if (!best || this.goesBefore(waiter, best)) next = index;
      }
      if (next === undefined) return;
      const [waiter] = this.waiting.splice(next, 1) as [Waiter];
      this.take(waiter.accountId, waiter.link);
      waiter.start();
    }
  }

  /**
   * Whether `waiter` starts before `other`, which arrived earlier: its account runs fewer, or as many and it is an API
   * key's request where `other` is a link's (a link's visitors never hold their owner's own requests back).
   */
  private goesBefore(waiter: Waiter, other: Waiter): boolean {
    const fewer = this.runningFor(waiter) - this.runningFor(other);
    return fewer < 0 || (fewer === 0 && other.link === true && waiter.link === undefined);
  }

  private runningFor(waiter: Waiter): number {
    return this.running.get(waiter.accountId) ?? 0;
  }
}

/** Adds `by` to the account's count, which is absent at 0. */
function count(counts: Map<string, number>, accountId: string, by: number): void {
  const now = (counts.get(accountId) ?? 0) + by;
  if (now > 0) counts.set(accountId, now);
  else counts.delete(accountId);
}

/** Puts `waiter` among `list` by its order of arrival. */
function inArrivalOrder(list: Waiter[], waiter: Waiter): void {
  const index = list.findIndex((other) => other.seq > waiter.seq);
  list.splice(index < 0 ? list.length : index, 0, waiter);
}

/** Takes `waiter` out of `list`: whether it was there. */
function remove(list: Waiter[], waiter: Waiter): boolean {
  const index = list.indexOf(waiter);
  if (index >= 0) list.splice(index, 1);
  return index >= 0;
}
