import type { RunJobDeps } from '../../shared/jobs/runJob';
import { IMMEDIATE_ADMISSION } from '../../shared/screenshot/admission';
import { InMemoryServiceMetrics } from './inMemoryMetrics';
import { MemoryImageStore, MemoryPendingRefunds } from './memoryPorts';

/**
 * The worker's dependencies as the job suites run it: the store, queue, ledger, slots, renderer and cipher they
 * give; every key active, every URL allowed, images, usage, pending refunds and metrics in memory, no local capture
 * queue.
 */
export function jobWorkerDeps(
  given: Pick<RunJobDeps, 'jobs' | 'queue' | 'credits' | 'captureSlots' | 'renderer' | 'cipher'> &
    Partial<RunJobDeps>,
): RunJobDeps {
  return {
    keyActive: async () => true,
    urlPolicy: { assertAllowed: async () => undefined },
    images: new MemoryImageStore(),
    usage: { record: () => undefined },
    admission: IMMEDIATE_ADMISSION,
    captureBudgetMs: 30_000,
    pendingRefunds: new MemoryPendingRefunds(),
    metrics: new InMemoryServiceMetrics(),
    now: () => Date.now(),
    ...given,
  };
}
