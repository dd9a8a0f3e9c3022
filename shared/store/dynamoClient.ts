import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

/**
 * Time limits for every DynamoDB call. The SDK's defaults wait up to 5 minutes on a silent socket, longer than any
 * of our functions live, so an unreachable table would hang requests until Lambda kills them (and API Gateway
 * answers 504). Single-item calls take milliseconds; with these, a dead endpoint fails a call after at most about
 * 3 x 2 s plus backoff, inside the 10 s management functions.
 */
export const DYNAMO_TIMEOUTS = {
  connectionTimeout: 1_000,
  requestTimeout: 2_000,
  maxAttempts: 3,
} as const;

/** The DynamoDB client every function and the local server use: bounded connection and request times. */
export function createDynamoClient(config: DynamoDBClientConfig = {}): DynamoDBClient {
  return new DynamoDBClient({
    maxAttempts: DYNAMO_TIMEOUTS.maxAttempts,
    requestHandler: {
      connectionTimeout: DYNAMO_TIMEOUTS.connectionTimeout,
      requestTimeout: DYNAMO_TIMEOUTS.requestTimeout,
      // Without this the SDK only logs a warning when requestTimeout passes.
      throwOnRequestTimeout: true,
    },
    ...config,
  });
}
