import type { CDPSession, Page, Protocol, Target } from 'puppeteer-core';
import { logger } from '../logger';
import { answerWithin } from './answerWithin';
import { PAGE_HEAP_LIMIT_MB } from './memoryLimits';

/** The first check: a warm capture has answered by then, so it pays nothing for the guard. */
const FIRST_CHECK_MS = 250;
/** Sooner once the page starts a worker: workers allocate in parallel, the fastest way past the limit. */
const WORKER_STARTED_CHECK_MS = 50;
const CHECK_EVERY_MS = 100;
/**
 * How long one isolate may take to report. Blink answers DevTools between a script's instructions, so a busy loop
 * still reports; a worker blocked in a synchronous request or an import does not, and keeps its last measure.
 */
const REPORT_WAIT_MS = 1_000;
/**
 * A worker silent this long counts as holding its heap cap, or what it last said if that is more: one that took
 * memory and then blocked itself held it unseen (red team). Not sooner: a worker importing a library from a slow
 * server is silent for seconds, and counted at its cap at once two of them failed an honest page (red team).
 */
const SILENT_COUNTS_AS_CAP_MS = 5_000;
const SILENT_ISOLATE_BYTES = PAGE_HEAP_LIMIT_MB * 2 ** 20;

export interface MemoryGuard {
  stop(): void;
}

/** What one isolate holds, as DevTools' `Runtime.getHeapUsage` reports it. */
type HeapUsage = Protocol.Runtime.GetHeapUsageResponse;

/** The captured page, and how its own isolate is measured (through our session on it: no second one is attached). */
export interface GuardedPage {
  page: Page;
  heapUsage(): Promise<HeapUsage>;
}

/**
 * Watches what the page's isolates hold (V8 heap, DOM heap, array buffers and external strings) and calls `exceeded`
 * once, with the total, when it passes `limitMb`. The caller ends the capture: closing its context ends every isolate
 * counted here. The page is measured through its own session; each worker of its context through a session attached
 * at its first check.
 */
export function guardPageMemory(
  guarded: GuardedPage,
  limitMb: number,
  exceeded: (usedBytes: number) => void,
): MemoryGuard {
  const context = guarded.page.browserContext();
  const pageTarget = guarded.page.target();
  const sessions = new Map<Target, Promise<CDPSession | undefined>>();
  const lastBytes = new Map<Target, number>();
  /** When each isolate that does not answer last did. */
  const silentSince = new Map<Target, number>();
  let timer: NodeJS.Timeout | undefined;
  let dueAt = Number.POSITIVE_INFINITY;
  let checking = false;
  let stopped = false;

  /** Checks in `ms`, unless a check runs now or comes sooner (a running check schedules the next when it ends). */
  const checkIn = (ms: number) => {
    if (stopped || checking || Date.now() + ms >= dueAt) return;
    clearTimeout(timer);
    dueAt = Date.now() + ms;
    timer = setTimeout(() => {
      check().catch((error: unknown) => logger.warn('Page memory not checked', { error: error as Error }));
    }, ms);
  };

  const usageOf = (target: Target): Promise<HeapUsage | undefined> => {
    if (target === pageTarget) return guarded.heapUsage();
    let session = sessions.get(target);
    if (!session) {
      session = target.createCDPSession().catch(() => undefined);
      sessions.set(target, session);
    }
    return session.then((attached) => attached?.send('Runtime.getHeapUsage'));
  };

  const measure = async (target: Target): Promise<void> => {
    const asked = Date.now();
    // A target that is gone, or is no isolate, answers with an error: it counts for nothing.
    const report = await answerWithin(
      usageOf(target).catch(() => undefined),
      REPORT_WAIT_MS,
    );
    if (report === 'late') {
      const since = silentSince.get(target) ?? asked;
      silentSince.set(target, since);
      if (Date.now() - since >= SILENT_COUNTS_AS_CAP_MS) {
        lastBytes.set(target, Math.max(lastBytes.get(target) ?? 0, SILENT_ISOLATE_BYTES));
      }
    } else if (report) {
      silentSince.delete(target);
      lastBytes.set(target, report.usedSize + report.embedderHeapUsedSize + report.backingStorageSize);
    }
  };

  const check = async (): Promise<void> => {
    checking = true;
    dueAt = Number.POSITIVE_INFINITY;
    const targets = context.targets();
    await Promise.all(targets.map(measure));
    checking = false;
    if (stopped) return;
    const used = targets.reduce((sum, target) => sum + (lastBytes.get(target) ?? 0), 0);
    if (used > limitMb * 2 ** 20) {
      stopped = true;
      exceeded(used);
      return;
    }
    checkIn(CHECK_EVERY_MS);
  };

  const targetCreated = () => checkIn(WORKER_STARTED_CHECK_MS);
  context.on('targetcreated', targetCreated);
  checkIn(FIRST_CHECK_MS);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      context.off('targetcreated', targetCreated);
      for (const session of sessions.values()) {
        void session.then((attached) => attached?.detach()).catch(() => undefined);
      }
    },
  };
}
