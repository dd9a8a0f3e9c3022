import {
  InvokeWithResponseStreamCommand,
  type InvokeWithResponseStreamResponseEvent,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import {
  CaptureFailedError,
  CaptureTimedOutError,
  ClientGoneError,
  OverloadedError,
  ValidationError,
} from '../errors';
import { logger } from '../logger';
import type { CaptureLimits, CaptureResult, CaptureSpec, Renderer } from './renderer';
import { decodeAnswer, expectedLength, type RenderFailure, type RenderRequest } from './rendererProtocol';

/** Past the capture's deadline, how long the renderer still has to answer before the front gives up on it. */
export const ANSWER_GRACE_MS = 5_000;
/** Past the answer, how long the renderer's leftover work (settle) is waited for before the stream is dropped. */
const SETTLE_LIMIT_MS = 10_000;
/**
 * The most a renderer's answer may weigh: above the largest image the spec allows in practice (a 3,840 x 16,384
 * full page), and far below the front's memory, so a taken-over renderer cannot exhaust it.
 */
export const MAX_ANSWER_BYTES = 256 * 1024 * 1024;

/**
 * The Renderer port over Lambda's InvokeWithResponseStream: the renderer function (or, locally, the renderer
 * process behind the same API) captures, the front only asks. Every answer is validated before it is believed; a
 * renderer that crashes, times out or answers garbage fails that capture (500, refunded by the use case) and
 * nothing else. The SDK never retries an invocation (the client is built with maxAttempts 1): a capture runs once.
 */
export class InvokedRenderer implements Renderer {
  /** Answers already delivered whose streams are still open while the renderer finishes its leftover work. */
  private readonly draining = new Set<Promise<void>>();

  constructor(
    private readonly client: Pick<LambdaClient, 'send'>,
    private readonly functionName: string,
  ) {}

  async capture(spec: CaptureSpec, limits: CaptureLimits): Promise<CaptureResult> {
    if (limits.signal?.aborted) throw new ClientGoneError();
    const stop = new AbortController();
    let timedOut = false;
    const late = setTimeout(
      () => {
        timedOut = true;
        stop.abort();
      },
      Math.max(0, limits.deadline - Date.now()) + ANSWER_GRACE_MS,
    );
    const onAbort = () => stop.abort();
    limits.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const answer = await this.invoke({ spec, deadline: limits.deadline }, stop);
      const decoded = decodeAnswer(answer);
      if (!decoded.ok) throw failureError(spec.url, decoded);
      return decoded.result;
    } catch (error) {
      if (limits.signal?.aborted) throw new ClientGoneError();
      if (
        error instanceof CaptureFailedError ||
        error instanceof OverloadedError ||
        error instanceof ValidationError
      )
        throw error;
      if (isThrottled(error)) throw new OverloadedError();
      if (timedOut) throw new CaptureFailedError(spec.url, 'The renderer did not answer in time');
      logger.error('Renderer failed', { error: error as Error });
      throw new CaptureFailedError(spec.url, 'The browser stopped during the capture');
    } finally {
      clearTimeout(late);
      limits.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Nothing to start: the renderer function warms itself in its own cold start. */
  async warmUp(): Promise<void> {}

  /** Resolves once the renderers of finished captures have closed their answers (their leftover work is done). */
  async settle(): Promise<void> {
    await Promise.all(this.draining);
  }

  async close(): Promise<void> {
    await this.settle();
  }

  /** The whole answer, read as soon as its header says how long it is; the rest of the stream drains aside. */
  private async invoke(request: RenderRequest, stop: AbortController): Promise<Buffer> {
    const response = await this.client.send(
      new InvokeWithResponseStreamCommand({
        FunctionName: this.functionName,
        Payload: Buffer.from(JSON.stringify(request)),
      }),
      { abortSignal: stop.signal },
    );
    if (!response.EventStream) throw new Error('The invocation returned no stream');
    const events = response.EventStream[Symbol.asyncIterator]();
    const chunks: Buffer[] = [];
    let received = 0;
    let expected: number | undefined;
    for (;;) {
      const { value, done } = await events.next();
      if (done) break;
      const event = value as InvokeWithResponseStreamResponseEvent;
      if (event.InvokeComplete) {
        if (event.InvokeComplete.ErrorCode) {
          throw new Error(`The renderer failed: ${event.InvokeComplete.ErrorCode.slice(0, 100)}`);
        }
        break;
      }
      const payload = event.PayloadChunk?.Payload;
      if (!payload) continue;
      // A view, not a copy: the decoder allocates each event's bytes; the image is copied once, into the answer.
      chunks.push(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
      received += payload.length;
      if (received > MAX_ANSWER_BYTES) throw new Error('The answer is larger than any image');
      expected ??= expectedLength(Buffer.concat(chunks));
      if (expected !== undefined && received >= expected) {
        this.drain(events, stop);
        break;
      }
    }
    return Buffer.concat(chunks, received);
  }

  private drain(events: AsyncIterator<unknown>, stop: AbortController): void {
    const limit = setTimeout(() => stop.abort(), SETTLE_LIMIT_MS);
    const drained = (async () => {
      for (;;) if ((await events.next()).done) return;
    })()
      .catch(() => undefined)
      .finally(() => {
        clearTimeout(limit);
        this.draining.delete(drained);
      });
    this.draining.add(drained);
  }
}

/** Lambda refused the invocation for concurrency: the capture did not start, and may be retried (503). */
function isThrottled(error: unknown): boolean {
  return error instanceof Error && error.name === 'TooManyRequestsException';
}

/** The front's error for a failure the renderer reported, of the kind it said. */
function failureError(url: string, failure: RenderFailure): Error {
  if (failure.kind === 'invalid' && failure.details?.length) return new ValidationError(failure.details);
  if (failure.kind === 'timedOut') return new CaptureTimedOutError(url, failure.reason, failure.fault);
  return new CaptureFailedError(url, failure.reason, failure.fault);
}
