/**
 * The service's CloudWatch metrics: one source for the code that emits them (shared/metrics/powertoolsMetrics.ts)
 * and the stack that alarms on them and charts them (infra/monitoring.ts).
 */
export const METRICS_NAMESPACE = 'ScreenshotService';

/**
 * Every metric carries this dimension, set to the deployment's stack name (POWERTOOLS_SERVICE_NAME), so two
 * environments in one account never add up in an alarm.
 */
export const SERVICE_DIMENSION = 'service';
/** Locally and in tests, where no stack sets POWERTOOLS_SERVICE_NAME. */
export const DEFAULT_SERVICE_NAME = 'screenshot-service';

/** Only `requestsByStatus` carries it: one series per HTTP status for the dashboard, too many to alarm on. */
export const STATUS_DIMENSION = 'status';

export const METRIC = {
  /** Every answered screenshot request, by status (dimension `status`). Unit: Count. */
  requestsByStatus: 'ScreenshotRequests',
  /**
   * Our faults: answers of 500 and above the handler gave itself (the browser failed, DynamoDB out of reach), never
   * a capture the customer's page made fail; 0 otherwise. Alarms and rollbacks read this one.
   */
  serverErrors: 'ScreenshotServerErrors',
  /**
   * Captures that failed because of the customer's page (unreachable, too slow, an error status with
   * failOnHttpError, no element for a selector): answered 500 but not our fault; 0 otherwise, and 0 for an MCP tool's,
   * which its call answers inside a 200. Unit: Count.
   */
  pageFailures: 'CustomerPageFailures',
  /** Credits taken by successful captures. Unit: Count. */
  creditsCharged: 'CreditsCharged',
  /** Time from admission to answer. Unit: Milliseconds. */
  captureDuration: 'CaptureDuration',
  /** 1 for an answer served from the cache, 0 otherwise. Unit: Count. */
  cacheHits: 'CacheHits',
  /** Refunds that could not be written: credits an operator must return (docs/deploy.md). Unit: Count. */
  refundFailures: 'RefundFailures',
  /** Usage records that could not be written (counted from the log line below). Unit: Count. */
  usageWriteFailures: 'UsageWriteFailures',
  /** KMS calls that failed for another reason than a forged or foreign ciphertext (from the log line below). */
  kmsFailures: 'KmsFailures',
} as const;

/**
 * Log messages the stack counts with metric filters: the code logs them, infra/monitoring.ts alarms on them. A
 * message changed here changes both.
 */
export const ALARMED_LOG_MESSAGES = {
  usageWriteFailures: 'Usage record not written',
  kmsFailures: 'KMS call failed',
} as const;
