import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** The deployed screenshot function's timeout, so local captures get the same time budget. */
export const LOCAL_FUNCTION_TIMEOUT_MS = 90_000;

/** A Lambda context as the runtime passes it, with the deadline counting down from now. */
export function lambdaContext(functionName: string, timeoutMs = LOCAL_FUNCTION_TIMEOUT_MS): Context {
  const deadline = Date.now() + timeoutMs;
  const requestId = randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '2048',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
