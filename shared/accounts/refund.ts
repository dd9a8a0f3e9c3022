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
 * Gives a failed capture's credits back; with a `refundId`, at most once for it whatever the retries
 * (CreditLedger.refundOnce). When that write fails, the debt is counted (the RefundFailures alarm), kept in the table
 * for `npm run credits -- refunds return`, and, should the table be out of reach too, logged with what an operator
 * needs. Never throws: the customer is owed the capture's own answer whatever happens here.
 */
export async function giveCreditsBack(
  deps: RefundDeps,
  accountId: string,
  cost: number,
  refundId?: string,
): Promise<void> {
  try {
    if (refundId === undefined) await deps.credits.refund(accountId, cost);
    else await deps.credits.refundOnce(accountId, cost, refundId);
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
