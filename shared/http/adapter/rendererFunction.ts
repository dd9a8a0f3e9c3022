import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { IMAGE_TOO_LARGE } from '../../capture/oversizedImage';
import type { CaptureSpec, Renderer } from '../../capture/renderer';
import {
  encodeFailure,
  encodeResult,
  IMAGE_TOO_SLOW_TO_DELIVER,
  MAX_ANSWER_BYTES,
  type RenderFailure,
  renderRequestSchema,
  streamableBytes,
} from '../../capture/rendererProtocol';
import { CaptureFailedError, CaptureTimedOutError, ClientGoneError, ValidationError } from '../../errors';
import { logger } from '../../logger';
import { ANSWER_GRACE_MS } from '../../timing';
import type { InvocationContext, StreamingLambdaHandler } from './lambdaStreaming';

/** Kept back from the function's own remaining time, so the renderer answers before Lambda stops it. */
const ANSWER_RESERVE_MS = 1_000;

/**
 * The renderer function's handler: a capture spec and a deadline in, the image streamed back
 * (shared/capture/rendererProtocol.ts). It knows no account, store or key; the front owns every rule. The answer
 * ends as soon as the image is written; the work the capture leaves behind (closing its context, preparing the
 * next tab) follows, before the handler returns. A stream closed before the answer (the front hung up) stops the
 * capture.
 */
export function rendererHandler(renderer: Renderer): StreamingLambdaHandler<unknown> {
  return async (event: unknown, stream: Writable, context: InvocationContext) => {
    const request = renderRequestSchema.safeParse(event);
    if (!request.success) {
      logger.error('Invalid render request', { issues: request.error.issues.length });
      stream.end(encodeFailure({ reason: 'The renderer received an invalid request' }));
      return;
    }
    const spec = request.data.spec as unknown as CaptureSpec;
    const deadline = Math.min(
      request.data.deadline,
      Date.now() + context.getRemainingTimeInMillis() - ANSWER_RESERVE_MS,
    );
    const hangUp = new AbortController();
    const onClose = () => hangUp.abort();
    stream.once('close', onClose);
    try {
      const result = await renderer.capture(spec, { deadline, signal: hangUp.signal });
      // The spec allows images heavier than the front takes (a full page of noise 11,520 px wide): the page made it
      // so, and it is told as the page's failure, not sent for the front to refuse as a broken renderer's.
      if (result.image.length > MAX_ANSWER_BYTES) {
        throw new CaptureFailedError(spec.url, IMAGE_TOO_LARGE, 'page');
      }
      const [header, image] = encodeResult(result);
      // Past the 6 MB Lambda streams at once, what the front will not have by the time it stops waiting is not started.
      if (
        header.length + image.length >
        streamableBytes(Date.now(), request.data.deadline + ANSWER_GRACE_MS)
      ) {
        throw new CaptureFailedError(spec.url, IMAGE_TOO_SLOW_TO_DELIVER, 'page');
      }
      stream.write(header);
      stream.end(image);
    } catch (error) {
      stream.end(encodeFailure(failureOf(error)));
    } finally {
      stream.off('close', onClose);
    }
    await renderer.settle();
    await finished(stream).catch(() => undefined);
  };
}

/**
 * The customer sees the reason of a failed capture, and the front learns its kind (a time budget, a field the browser
 * refused); anything else is logged here and told in general terms.
 */
function failureOf(error: unknown): Omit<RenderFailure, 'ok'> {
  if (error instanceof ValidationError)
    return { reason: error.message, kind: 'invalid', details: error.details };
  if (error instanceof CaptureTimedOutError)
    return { reason: error.reason, kind: 'timedOut', fault: error.fault };
  if (error instanceof CaptureFailedError) return { reason: error.reason, fault: error.fault };
  if (error instanceof ClientGoneError) return { reason: 'The front hung up' };
  logger.error('Capture failed', { error: error as Error });
  return { reason: 'The page could not be captured' };
}
