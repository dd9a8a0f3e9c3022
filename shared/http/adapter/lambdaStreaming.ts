import type { Writable } from 'node:stream';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';

/** What the adapters read of the Lambda context; the local server and the tests supply just this. */
export type InvocationContext = Pick<Context, 'awsRequestId' | 'getRemainingTimeInMillis'>;

/** Status and headers of a streamed response, sent before the first body byte. */
export interface ResponsePrelude {
  statusCode: number;
  headers: Record<string, string>;
}

export type StreamingLambdaHandler<Event = APIGatewayProxyEvent> = (
  event: Event,
  responseStream: Writable,
  context: InvocationContext,
) => Promise<void>;

/** The part of the Lambda runtime's `awslambda` global that response streaming uses. */
export interface StreamingRuntime {
  streamifyResponse<Event>(handler: StreamingLambdaHandler<Event>): StreamingLambdaHandler<Event>;
  HttpResponseStream: { from(stream: Writable, prelude: ResponsePrelude): Writable };
}

/** Emitted on the response stream by the stand-in's `HttpResponseStream.from`; the local server listens for it. */
export const PRELUDE_EVENT = 'prelude';

/**
 * Outside Lambda (local server, tests) the same handler runs against this stand-in: `from` hands the prelude to
 * whoever owns the stream and returns the stream itself, which is what the runtime's version does in effect.
 */
const localStandIn: StreamingRuntime = {
  streamifyResponse: (handler) => handler,
  HttpResponseStream: {
    from(stream, prelude) {
      stream.emit(PRELUDE_EVENT, prelude);
      return stream;
    },
  },
};

export function streamingRuntime(): StreamingRuntime {
  // `awslambda` with streaming is a global of the Lambda Node.js runtime only. Other libraries (the SDK's invoke
  // store) create an empty `awslambda` object elsewhere, so test for the functions themselves.
  const runtime = (globalThis as unknown as { awslambda?: Partial<StreamingRuntime> }).awslambda;
  return runtime?.streamifyResponse && runtime.HttpResponseStream
    ? (runtime as StreamingRuntime)
    : localStandIn;
}
