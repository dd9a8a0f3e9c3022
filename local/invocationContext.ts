import { randomUUID } from 'node:crypto';
import type { InvocationContext } from '../shared/http/adapter/lambdaStreaming';
import { SCREENSHOT_FUNCTION_TIMEOUT_MS } from '../shared/timing';

/** What the adapter reads of a Lambda context: a request id, and the deadline counting down from now. */
export function invocationContext(timeoutMs = SCREENSHOT_FUNCTION_TIMEOUT_MS): InvocationContext {
  const deadline = Date.now() + timeoutMs;
  return {
    awsRequestId: randomUUID(),
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
}
