/**
 * A bound on the upstream connections one route has in progress at once: a page naming hundreds of hosts that never
 * answer would otherwise have the proxy connecting to all of them together, each holding descriptors for the connect
 * timeout, in a process that serves other captures. Waiters beyond the bound queue in order, and leave the queue as
 * soon as their signal aborts (the client left, the route closed).
 */
export class ConnectSlots {
  private inUse = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  /** Resolves with the slot's release once one is free; rejects if `signal` aborts first. */
  async take(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.inUse >= this.size) {
      await new Promise<void>((resolve, reject) => {
        const turn = () => {
          signal.removeEventListener('abort', leave);
          resolve();
        };
        const leave = () => {
          this.waiting.splice(this.waiting.indexOf(turn), 1);
          reject(signal.reason);
        };
        this.waiting.push(turn);
        signal.addEventListener('abort', leave, { once: true });
      });
    } else {
      this.inUse++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot passes straight to the next waiter, if any, so inUse stays counted.
      const next = this.waiting.shift();
      if (next) next();
      else this.inUse--;
    };
  }
}
