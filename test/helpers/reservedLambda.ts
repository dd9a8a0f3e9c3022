import { Writable } from 'node:stream';
import {
  type InvokeWithResponseStreamCommand,
  type LambdaClient,
  TooManyRequestsException,
} from '@aws-sdk/client-lambda';
import { invocationContext } from '../../local/invocationContext';
import type { Renderer } from '../../shared/capture/renderer';
import { rendererHandler } from '../../shared/http/adapter/rendererFunction';

/** The names the deployed front knows its two renderers by (RENDERER_FUNCTION_NAME, RENDERER_HEADROOM_FUNCTION_NAME). */
export const SHARED_RENDERER = 'renderer:live';
export const HEADROOM_RENDERER = 'headroom-renderer:live';

/**
 * Lambda as the deployed front meets it, for rule tests: each renderer function runs at most its reserved
 * concurrency, and one more invocation is refused at once with the SDK's own TooManyRequestsException, as Lambda
 * throttles. An invocation that runs is the real renderer handler over `renderer`, its answer streamed back in the
 * protocol's bytes. `throwOn` makes every invocation of a function fail with that error instead.
 */
export class ReservedLambda {
  /** Every invocation asked for, in order: the function, and whether it was throttled. */
  readonly invocations: { functionName: string; throttled: boolean }[] = [];
  readonly throwOn = new Map<string, Error>();
  private readonly running = new Map<string, number>();
  private readonly handler;

  constructor(
    /** Each function's reserved concurrency; a test may change it. */
    readonly reserved: Record<string, number>,
    renderer: Renderer,
  ) {
    this.handler = rendererHandler(renderer);
  }

  /** The client the front is given. */
  readonly client = {
    send: (command: InvokeWithResponseStreamCommand, options?: { abortSignal?: AbortSignal }) =>
      abandonable(this.invoke(command), options?.abortSignal),
  } as unknown as Pick<LambdaClient, 'send'>;

  /** Captures running now on the function. */
  runningOn(functionName: string): number {
    return this.running.get(functionName) ?? 0;
  }

  private async invoke(command: InvokeWithResponseStreamCommand) {
    const functionName = command.input.FunctionName ?? '';
    const failure = this.throwOn.get(functionName);
    if (failure) throw failure;
    const throttled = this.runningOn(functionName) >= (this.reserved[functionName] ?? 0);
    this.invocations.push({ functionName, throttled });
    if (throttled) {
      throw new TooManyRequestsException({
        message: 'Rate Exceeded.',
        Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
        $metadata: { httpStatusCode: 429 },
      });
    }
    this.running.set(functionName, this.runningOn(functionName) + 1);
    try {
      const event: unknown = JSON.parse(Buffer.from(command.input.Payload as Uint8Array).toString('utf8'));
      const chunks: Buffer[] = [];
      const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
          chunks.push(Buffer.from(chunk));
          done();
        },
      });
      await this.handler(event, stream, invocationContext());
      return { EventStream: answer(chunks), $metadata: {} };
    } finally {
      this.running.set(functionName, this.runningOn(functionName) - 1);
    }
  }
}

/** As the SDK's client: an aborted call rejects at once, while the function it started runs on (as Lambda's does). */
function abandonable<T>(call: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return call;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(Object.assign(new Error('Request aborted'), { name: 'AbortError' }));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    call.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

async function* answer(chunks: Buffer[]) {
  for (const chunk of chunks) yield { PayloadChunk: { Payload: new Uint8Array(chunk) } };
  yield { InvokeComplete: {} };
}
