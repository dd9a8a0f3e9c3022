import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { StoreUnavailableError } from '../errors';
import { logger } from '../logger';
import { OUTCOME_UNKNOWN } from './dynamoClient';

/** DynamoDB's answers that mean "not now" rather than "no": capacity and its own failures. */
const TRANSIENT_ERROR_NAMES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TimeoutError',
  OUTCOME_UNKNOWN,
]);

/**
 * True when an AWS call failed because the service was unreachable, timed out, throttled (one of `transient`, the
 * service's names for "not now") or failed on its side, after the SDK's own retries. Errors with an HTTP status below
 * 500 (a failed condition, a validation error, a queue that does not exist) are answers, not outages.
 */
export function isServiceOutage(error: unknown, transient: ReadonlySet<string>): boolean {
  if (!(error instanceof Error)) return false;
  if (transient.has(error.name)) return true;
  const metadata = (error as { $metadata?: { httpStatusCode?: number } }).$metadata;
  if (!metadata) return false;
  // The SDK attaches $metadata to network failures too (refused, reset), without a status.
  return metadata.httpStatusCode === undefined || metadata.httpStatusCode >= 500;
}

const MIDDLEWARE_NAME = 'storeUnavailableTranslation';

/**
 * Makes every call through `client` (and document clients built on it, which share its middleware stack) fail with
 * StoreUnavailableError when DynamoDB is out of reach, so callers answer a clear 503 instead of a generic 500.
 * Idempotent: wiring may call it for the same client more than once.
 */
export function translateStoreOutages(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (!isServiceOutage(error, TRANSIENT_ERROR_NAMES)) throw error;
        logger.error('DynamoDB unavailable', { operation: context.commandName, error: error as Error });
        throw new StoreUnavailableError();
      }
    },
    { step: 'initialize', name: MIDDLEWARE_NAME, override: true },
  );
}
