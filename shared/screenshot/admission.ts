import type { SlotPool } from '../accounts/captureSlots';

/**
 * Where an authenticated screenshot request waits for its turn to run. The local server's queue plays Lambda's
 * concurrency and shares it fairly between accounts (local/admissionQueue.ts); deployed, a request runs as soon as
 * its function does. The capture's time budget starts when the task starts, not when the request arrived.
 */
export interface Admission {
  /**
   * Runs `task` in its turn, telling it whether it had to wait for it; a request whose client left (`signal`) may be
   * dropped while it waits (ClientGoneError). A signed link's request (`pool`) leaves its account's API keys room.
   */
  run<T>(
    accountId: string,
    task: (waited: boolean) => Promise<T>,
    signal?: AbortSignal,
    pool?: SlotPool,
  ): Promise<T>;
}

/** No queue: the request runs at once (Lambda). */
export const IMMEDIATE_ADMISSION: Admission = { run: (_accountId, task) => task(false) };
