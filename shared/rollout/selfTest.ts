import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { Renderer } from '../capture/renderer';
import { CaptureFailedError } from '../errors';
import type { StreamingLambdaHandler } from '../http/adapter/lambdaStreaming';
import { logger } from '../logger';
import { captureSpecOf } from '../screenshot/captureSpec';
import { screenshotRequest } from '../screenshot/schema';

/**
 * A direct invocation asking a new version to capture a known page before it takes traffic (the CodeDeploy
 * pre-traffic hook sends it). API Gateway never sends one: its events always carry `httpMethod`, and only a
 * principal allowed to invoke the function directly can send anything else.
 */
export interface SelfTestEvent {
  selfTest: { url: string };
}

export interface SelfTestResult {
  ok: boolean;
  /** Size of the image taken, when it was. */
  bytes?: number;
  /** Why not, in the words a customer would read. */
  reason?: string;
}

/** A self-test has this long: well inside the hook's own timeout. */
export const SELF_TEST_BUDGET_MS = 30_000;

export function isSelfTestEvent(event: unknown): event is SelfTestEvent {
  if (event === null || typeof event !== 'object' || 'httpMethod' in event) return false;
  const selfTest = (event as { selfTest?: unknown }).selfTest;
  return (
    selfTest !== null &&
    typeof selfTest === 'object' &&
    typeof (selfTest as { url?: unknown }).url === 'string'
  );
}

/** Captures the page with the defaults of a screenshot request: the browser starts, renders and encodes. */
export async function selfTest(renderer: Renderer, url: string, now = Date.now): Promise<SelfTestResult> {
  try {
    const spec = captureSpecOf(screenshotRequest.parse({ url }));
    const { image } = await renderer.capture(spec, { deadline: now() + SELF_TEST_BUDGET_MS });
    return image.length > 0 ? { ok: true, bytes: image.length } : { ok: false, reason: 'Empty image' };
  } catch (error) {
    logger.error('Self-test failed', { error: error as Error });
    return { ok: false, reason: error instanceof CaptureFailedError ? error.reason : 'The capture failed' };
  } finally {
    await renderer.settle();
  }
}

/** The screenshot function's handler, answering a self-test event itself and everything else through `api`. */
export function withSelfTest(api: StreamingLambdaHandler, renderer: Renderer): StreamingLambdaHandler {
  return async (event: APIGatewayProxyEvent | SelfTestEvent, responseStream, context) => {
    if (!isSelfTestEvent(event)) return api(event, responseStream, context);
    responseStream.end(JSON.stringify(await selfTest(renderer, event.selfTest.url)));
  };
}
