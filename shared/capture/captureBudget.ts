import { CaptureTimedOutError } from '../errors';
import type { CaptureBudgets } from '../timing';

/**
 * Navigation (up to the load event), then everything after it (delay, settling, the image), whose last step for a PDF
 * is its printing: that shares the time after load, and only names the step that ran out of it.
 */
export type CapturePhase = 'navigation' | 'afterLoad' | 'printing';

/**
 * The clock of one capture. The request's deadline is owned by the use case that admitted it; within it, navigation
 * may last `navigationMs` and what follows `afterLoadMs`, neither past the deadline. When the running phase's time is
 * up, `onExpired` is told which phase it was and how long it had.
 */
export class CaptureBudget {
  private timer: NodeJS.Timeout | undefined;
  private phaseEndsAt: number;
  private phase: CapturePhase = 'navigation';

  constructor(
    private readonly deadline: number,
    private readonly budgets: CaptureBudgets,
    private readonly onExpired: (phase: CapturePhase, allowedMs: number) => void,
  ) {
    this.phaseEndsAt = deadline;
  }

  startNavigation(): void {
    this.arm('navigation', this.budgets.navigationMs);
  }

  /** The page has loaded; what follows gets its own time, plus `extraMs` the caller asked to wait (`delay`). */
  loaded(extraMs = 0): void {
    this.arm('afterLoad', this.budgets.afterLoadMs + extraMs);
  }

  /** The page is held and Chromium prints it, in the time left after load. */
  printing(): void {
    if (this.phase === 'afterLoad') this.phase = 'printing';
  }

  /** When the running phase's time is up, ms since epoch: the bound of any wait inside it. */
  phaseEnd(): number {
    return this.phaseEndsAt;
  }

  dispose(): void {
    clearTimeout(this.timer);
  }

  private arm(phase: CapturePhase, budgetMs: number): void {
    clearTimeout(this.timer);
    const now = Date.now();
    this.phase = phase;
    this.phaseEndsAt = Math.min(now + budgetMs, this.deadline);
    const allowedMs = Math.max(0, this.phaseEndsAt - now);
    this.timer = setTimeout(() => this.onExpired(this.phase, allowedMs), allowedMs);
  }
}

/**
 * What the customer is told when a phase ran out of time (docs/api.md, "Failures"). `busy`: the page's renderer did
 * not answer at that moment, so its own scripts were holding it (an endless loop, a huge allocation).
 */
export function budgetExceeded(
  url: string,
  phase: CapturePhase,
  allowedMs: number,
  busy: boolean,
): CaptureTimedOutError {
  const seconds = `${Number((allowedMs / 1000).toFixed(1))} s`;
  // Printing keeps the page's renderer as busy as a looping script would: say what it was doing (red team, round 22:
  // a long tagged PDF of a static document was blamed on scripts it did not have).
  if (phase === 'printing') {
    return new CaptureTimedOutError(
      url,
      busy
        ? `The page loaded, but its PDF was not printed within ${seconds}: a document this long or complex, or its scripts, kept the browser busy`
        : `The page loaded, but its PDF was not printed within ${seconds}`,
      'page',
    );
  }
  if (phase === 'navigation') {
    return new CaptureTimedOutError(
      url,
      busy
        ? `The page did not load within ${seconds}: its scripts kept the browser busy, so it was stopped`
        : `The page did not load within ${seconds}`,
      'page',
    );
  }
  return new CaptureTimedOutError(
    url,
    busy
      ? `The page stopped responding after it loaded (its scripts kept the browser busy) and was stopped after ${seconds}`
      : `The capture did not finish within ${seconds} after the page loaded`,
    'page',
  );
}
