/** How one screenshot request ended, as the use case knows it when the answer is sent. */
export interface CaptureOutcome {
  /** The HTTP status answered (200, 4xx, 500, 503). */
  status: number;
  /** Time from admission to answer. */
  durationMs: number;
  /** Credits kept: the cost of a successful capture, 0 for every other answer and for a cache hit. */
  creditsCharged: number;
  cacheHit: boolean;
  /**
   * The capture failed because of the customer's page (CaptureFailedError with fault `page`): a business metric of
   * its own, never one of our faults.
   */
  pageFault: boolean;
  /**
   * The answer went back inside an MCP tool result, an HTTP 200 whatever it says: a page failure there is no 5xx of
   * API Gateway's for CustomerPageFailures to offset (review of the deployed stack, round 25: each one hid a real 5xx).
   */
  inToolResult?: boolean;
}

/**
 * Port for the service's business metrics (names in ./names.ts). Recording never throws and never waits: a metric
 * must not cost a customer an answer. `flush` publishes what was recorded; call it once per invocation, after the
 * answer, in a `finally`.
 */
export interface ServiceMetrics {
  /** Call once per answered screenshot request. */
  captureFinished(outcome: CaptureOutcome): void;
  /** A refund could not be written; the credits are owed to the account (see shared/accounts/refund.ts). */
  refundFailed(): void;
  flush(): void;
}
