import { logger } from '../logger';
import type { ServiceMetrics } from '../metrics/serviceMetrics';
import type { CreditLedger } from './creditLedger';
import type { PendingRefunds } from './pendingRefunds';

export interface RefundDeps {
  credits: CreditLedger;
  pendingRefunds: PendingRefunds;
  metrics: ServiceMetrics;
  now: () => number;
}

/**
 * Gives a failed capture's credits back. When that write fails, the debt is counted (the RefundFailures alarm), kept
 * in the table for `npm run credits -- refunds return`, and, should the table be out of reach too, logged with what an
 * operator needs. Never throws: the customer is owed the capture's own answer whatever happens here. (A job's refund
 * does not come here: it stays owed on the job until it lands, shared/jobs/runJob.ts.)
 */
export async function giveCreditsBack(deps: RefundDeps, accountId: string, cost: number): Promise<void> {
  try {
    await deps.credits.refund(accountId, cost);
    return;
  } catch (error) {
    deps.metrics.refundFailed();
    logger.error('Refund failed', { accountId, cost, error: error as Error });
  }
  try {
    const pending = await deps.pendingRefunds.record({ accountId, cost, failedAt: deps.now() });
    logger.warn('Refund kept for an operator', { refundId: pending.id });
  } catch (error) {
    logger.error('Refund not recorded either; return the credits by hand', {
      accountId,
      cost,
      error: error as Error,
    });
  }
}
