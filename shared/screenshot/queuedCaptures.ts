import type { CreditEpoch } from '../accounts/creditLedger';
import type { KeyIdentity } from '../keys/keyStore';

/** One capture to queue: its validated fields and the credits reserved for it. */
export interface QueuedCapture {
  request: Record<string, unknown>;
  cost: number;
  /** The balance's epoch its credits were reserved in (CreditEpoch), which their refund names. */
  creditEpoch?: CreditEpoch;
}

/** An accepted async capture as its 202 answers it (docs/api.md, "Async captures"). */
export interface QueuedJob {
  id: string;
  status: 'queued';
  createdAt: number;
}

/**
 * Where an `async: true` capture goes (jobs/jobIntake.ts behind it). When it throws, the caller gives back the
 * reserved credits that `givenBack` names.
 */
export type QueueCapture = (
  identity: KeyIdentity,
  capture: QueuedCapture,
  options: { webhookUrl?: string | undefined },
) => Promise<QueuedJob>;

/**
 * The intake failed with `reason` (what the request is answered). Of the credits the captures reserved, `creditsKept`
 * belong to jobs a worker already ended, or whose state is unknown; the caller gives back the rest (givenBack).
 * `taken`: the jobs a worker holds (written, and not ended by the intake), which run all the same.
 */
export class JobsNotAccepted extends Error {
  constructor(
    readonly reason: unknown,
    readonly creditsKept: number,
    readonly taken: { id: string; createdAt: number }[] = [],
  ) {
    super('Jobs not accepted');
  }
}

/** After an intake threw `error`: the credits to give back of the `reserved` ones, and the error to answer. */
export function givenBack(error: unknown, reserved: number): { credits: number; error: unknown } {
  return error instanceof JobsNotAccepted
    ? { credits: reserved - error.creditsKept, error: error.reason }
    : { credits: reserved, error };
}
