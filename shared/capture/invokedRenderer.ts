import {
  InvokeWithResponseStreamCommand,
  type InvokeWithResponseStreamResponseEvent,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import {
  CapacityFullError,
  CaptureFailedError,
  CaptureTimedOutError,
  ClientGoneError,
  ValidationError,
} from '../errors';
import { logger } from '../logger';
import { ANSWER_GRACE_MS } from '../timing';
import { checkAnswer } from './answerCheck';
import type { CaptureLimits, CaptureResult, CaptureSpec, Renderer } from './renderer';
import { AnswerReader, type RenderAnswer, type RenderFailure, type RenderRequest } from './rendererProtocol';

/** Past the answer, how long the renderer's leftover work (settle) is waited for before the stream is dropped. */
const SETTLE_LIMIT_MS = 10_000;

/**
 * The Renderer port over Lambda's InvokeWithResponseStream: the renderer function (or, locally, the renderer
 * process behind the same API) captures, the front only asks. Every answer is validated before it is believed; a
 * renderer that crashes, times out or answers garbage fails that capture (500, refunded by the use case) and
 * nothing else. The SDK never retries an invocation (the client is built with maxAttempts 1): a capture runs once.
 *
 * Deployed, the capture capacity is the renderers' reserved concurrency (docs/api.md 6.5): the shared renderer is
 * asked first; when Lambda throttles it (at once, before anything ran), a newcomer's capture asks the headroom
 * renderer, the same code with a reservation of its own. Any other capture, or a throttle there too, fails with
 * CapacityFullError: nothing started, and the use case gives back what admission took.
 */
export class InvokedRenderer implements Renderer {
  /** Answers already delivered whose streams are still open while the renderer finishes its leftover work. */
  private readonly draining = new Set<Promise<void>>();

  constructor(
    private readonly client: Pick<LambdaClient, 'send'>,
    /** The shared renderer (its live alias). */
    private readonly functionName: string,
    /** The headroom renderer, for newcomers only; absent locally, where the admission queue keeps the headroom. */
    private readonly headroomFunctionName?: string,
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
      const decoded = await this.invoke({ spec, deadline: limits.deadline }, stop, limits.newcomer === true);
      if (!decoded.ok) throw failureError(spec.url, decoded);
      // What the bytes are is the front's to say, from what it asked for.
      checkAnswer(spec, decoded.result);
      return decoded.result;
    } catch (error) {
      if (limits.signal?.aborted) throw new ClientGoneError();
      if (
        error instanceof CaptureFailedError ||
        error instanceof CapacityFullError ||
        error instanceof ValidationError
      )
        throw error;
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
  private async invoke(
    request: RenderRequest,
    stop: AbortController,
    newcomer: boolean,
  ): Promise<RenderAnswer> {
    const payload = Buffer.from(JSON.stringify(request));
    const start = (functionName: string) =>
      this.client.send(
        new InvokeWithResponseStreamCommand({ FunctionName: functionName, Payload: payload }),
        {
          abortSignal: stop.signal,
        },
      );
    let response: Awaited<ReturnType<typeof start>>;
    try {
      response = await start(this.functionName);
    } catch (error) {
      if (!isThrottled(error)) throw error;
      if (!newcomer || !this.headroomFunctionName) throw new CapacityFullError();
      response = await start(this.headroomFunctionName).catch((headroomError: unknown) => {
        throw isThrottled(headroomError) ? new CapacityFullError() : headroomError;
      });
    }
    if (!response.EventStream) throw new Error('The invocation returned no stream');
    const events = response.EventStream[Symbol.asyncIterator]();
    const reader = new AnswerReader();
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
      const chunk = event.PayloadChunk?.Payload;
      if (!chunk) continue;
      // A view, not a copy: the decoder allocates each event's bytes; the image is copied once, into the answer.
      let complete: boolean;
      try {
        complete = reader.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      } catch (error) {
        // Garbage: nothing more is read of it, and a renderer still streaming it is cut off.
        stop.abort();
        throw error;
      }
      if (complete) {
        this.drain(events, stop);
        break;
      }
    }
    return reader.answer();
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

/** Lambda refused the invocation for the function's reserved concurrency: the capture did not start. */
function isThrottled(error: unknown): boolean {
  return error instanceof Error && error.name === 'TooManyRequestsException';
}

/** The front's error for a failure the renderer reported, of the kind it said. */
function failureError(url: string, failure: RenderFailure): Error {
  // What the renderer refuses is the body's (a selector Chromium cannot parse): named as every body problem is.
  if (failure.kind === 'invalid' && failure.details?.length)
    return new ValidationError(failure.details, 'Invalid request body');
  if (failure.kind === 'timedOut') return new CaptureTimedOutError(url, failure.reason, failure.fault);
  return new CaptureFailedError(url, failure.reason, failure.fault);
}
