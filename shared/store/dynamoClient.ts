import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { tracer } from '../tracer';

export interface DynamoTimeouts {
  /** Time to open a connection. Nothing has been sent yet, so the SDK may retry it. */
  connectionTimeout: number;
  /** Time for an answer once the request is sent. Never retried: the request may have been applied. */
  requestTimeout: number;
}

/**
 * Limits for the deployed functions. The SDK's defaults wait up to 5 minutes on a silent socket, longer than any of
 * our functions live, so an unreachable table would hang requests until Lambda killed them. Single-item calls take
 * milliseconds: these only fire when DynamoDB is out of reach, and then a call fails within about 5 s, inside the
 * 10 s management functions.
 */
const DYNAMO_TIMEOUTS: DynamoTimeouts = { connectionTimeout: 1_000, requestTimeout: 5_000 };

/** The name a request timeout is rethrown under, so the SDK's retry logic does not replay it. */
export const OUTCOME_UNKNOWN = 'DynamoRequestOutcomeUnknown';

/**
 * The DynamoDB client the functions and the local server use: bounded waits, no replay of sent writes, and each call
 * traced in X-Ray when running in Lambda.
 */
export function createDynamoClient(
  config: DynamoDBClientConfig = {},
  timeouts = DYNAMO_TIMEOUTS,
): DynamoDBClient {
  const client = new DynamoDBClient({
    maxAttempts: 3,
    requestHandler: {
      connectionTimeout: timeouts.connectionTimeout,
      requestTimeout: timeouts.requestTimeout,
      // Without this the SDK only logs a warning when requestTimeout passes.
      throwOnRequestTimeout: true,
    },
    ...config,
  });
  // The SDK retries timeouts like any transient error. For our writes that is unsafe: a reservation or a rate-limit
  // count that DynamoDB applied but did not confirm in time would be applied again (credits taken twice). Below the
  // retry step, a request timeout becomes an error the retry logic leaves alone; the caller answers 503.
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (!isRequestTimeout(error)) throw error;
        throw Object.assign(
          new Error(
            `DynamoDB did not answer within ${timeouts.requestTimeout} ms; the request may have been applied`,
          ),
          { name: OUTCOME_UNKNOWN },
        );
      }
    },
    { step: 'deserialize', name: 'noReplayAfterRequestTimeout', priority: 'low' },
  );
  return tracer.captureAWSv3Client(client);
}

/** Smithy's request timer (sent, no answer) as opposed to its connection timer (never sent), which has no code. */
function isRequestTimeout(error: unknown): boolean {
  return (
    error instanceof Error &&
    error.name === 'TimeoutError' &&
    (error as { code?: unknown }).code === 'ETIMEDOUT'
  );
}
