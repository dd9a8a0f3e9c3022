import { logger } from '../logger';
import type { ServiceMetrics } from '../metrics/serviceMetrics';
import type { CreditEpoch, CreditLedger } from './creditLedger';
import type { CreditReservation } from './creditReservation';
import { newRefundId, type PendingRefund, type PendingRefunds } from './pendingRefunds';

export interface RefundDeps {
  credits: CreditLedger;
  pendingRefunds: PendingRefunds;
  metrics: ServiceMetrics;
  now: () => number;
}

/**
 * Gives a failed capture's credits back (an async capture's or a batch's not accepted; a synchronous capture's are
 * reserved: giveReservationBack), into the balance's `epoch` they were reserved in (none if it was set since).
 * When that write fails, the debt is counted (the RefundFailures alarm), kept
 * in the table for `npm run credits -- refunds return`, and, should the table be out of reach too, logged with what an
 * operator needs. Never throws: the customer is owed the capture's own answer whatever happens here. (A job's refund
 * does not come here: it stays owed on the job until it lands, shared/jobs/runJob.ts.)
 *
 * The refund leaves a mark on the account under the id a pending refund would keep: a write that failed may have
 * landed all the same (a timeout), and returning the pending one then finds the mark and gives nothing (red team:
 * it paid twice). Once the refund is known to have landed, the mark goes: one more write, on failed captures only.
 */
export async function giveCreditsBack(
  deps: RefundDeps,
  accountId: string,
  cost: number,
  epoch?: CreditEpoch,
): Promise<void> {
  const failedAt = deps.now();
  const id = newRefundId(failedAt);
  try {
    await deps.credits.refundOnce(accountId, cost, id, epoch);
  } catch (error) {
    deps.metrics.refundFailed();
    logger.error('Refund failed', { accountId, cost, refundId: id, error: error as Error });
    await keepForOperator(deps, {
      id,
      accountId,
      cost,
      failedAt,
      ...(epoch === undefined ? {} : { creditEpoch: epoch }),
    });
    return;
  }
  await deps.credits
    .forgetRefund(accountId, id)
    .catch((error: unknown) =>
      logger.warn('Refund mark left on the account', { refundId: id, error: error as Error }),
    );
}

/**
 * Gives a synchronous capture's reserved credits back (CreditReservation). A write that fails is counted (the
 * RefundFailures alarm) and left to the reservation itself: it lapses, and the account's next admission or look at
 * its balance gives the credits back. Nothing is kept for an operator: that would be a second way to the same credits.
 */
export async function giveReservationBack(
  deps: Pick<RefundDeps, 'credits' | 'metrics'>,
  accountId: string,
  reservation: CreditReservation,
): Promise<void> {
  try {
    await deps.credits.refundReservation(accountId, reservation);
  } catch (error) {
    deps.metrics.refundFailed();
    logger.error('Refund failed; the credits go back when their reservation lapses', {
      accountId,
      cost: reservation.cost,
      error: error as Error,
    });
  }
}

/**
 * Keeps a synchronous capture's reserved credits spent: its answer was settled. A write that fails leaves the
 * reservation to lapse, and the capture is then given back free: logged, as credits lost to a store fault.
 */
export async function keepReservedCredits(
  deps: Pick<RefundDeps, 'credits'>,
  accountId: string,
  reservation: CreditReservation,
): Promise<void> {
  await deps.credits.chargeReservation(accountId, reservation.id).catch((error: unknown) =>
    logger.error('Reserved credits not charged; they go back when their reservation lapses', {
      accountId,
      cost: reservation.cost,
      error: error as Error,
    }),
  );
}

async function keepForOperator(deps: RefundDeps, pending: PendingRefund): Promise<void> {
  const { accountId, cost, id: refundId } = pending;
  try {
    await deps.pendingRefunds.record(pending);
    logger.warn('Refund kept for an operator', { refundId });
  } catch (error) {
    // With its id: the account item holds `refund#<refundId>` when the refund landed after all (docs/deploy.md).
    logger.error('Refund not recorded either; return the credits by hand', {
      accountId,
      cost,
      refundId,
      error: error as Error,
    });
  }
}
