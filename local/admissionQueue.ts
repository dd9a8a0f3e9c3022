import { OverloadedError } from '../shared/errors';
import type { Admission } from '../shared/screenshot/admission';

/**
 * Bounds the work the local server does at once, as Lambda's concurrency does in AWS: up to `maxRunning` tasks
 * run, up to `maxWaiting` more wait their turn in order, and anything beyond gets OverloadedError (503) at once.
 */
export class AdmissionQueue implements Admission {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly maxRunning: number,
    private readonly maxWaiting: number,
  ) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.maxRunning) {
      if (this.waiting.length >= this.maxWaiting) throw new OverloadedError();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      // Hand the slot straight to the next waiter, so `running` never dips and lets a newcomer jump the queue.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
