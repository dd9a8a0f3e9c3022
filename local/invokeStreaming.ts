import { PassThrough } from 'node:stream';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { InvocationContext } from '../shared/http/adapter/lambdaStreaming';
import {
  PRELUDE_EVENT,
  type ResponsePrelude,
  type StreamingLambdaHandler,
} from '../shared/http/adapter/lambdaStreaming';

export interface BufferedResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** Milliseconds from the invocation to the end of the streamed answer: what the client waits for. */
  answeredMs: number;
}

/**
 * Invokes a streaming handler as the Lambda runtime does (through the stand-in) and reads the whole streamed body.
 * Resolves once the handler has returned, as Lambda's next invocation would wait for it; `answeredMs` says when the
 * client had its answer. Tests and the benchmark use it; the local server pipes instead.
 */
export async function invokeStreaming(
  handler: StreamingLambdaHandler,
  event: APIGatewayProxyEvent,
  context: InvocationContext,
): Promise<BufferedResponse> {
  const stream = new PassThrough();
  let prelude: ResponsePrelude | undefined;
  stream.once(PRELUDE_EVENT, (p: ResponsePrelude) => {
    prelude = p;
  });
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  const started = performance.now();
  let answeredMs = Number.NaN;
  stream.once('end', () => {
    answeredMs = performance.now() - started;
  });
  await handler(event, stream, context);
  if (!prelude) throw new Error('the handler sent no status and headers');
  return { status: prelude.statusCode, headers: prelude.headers, body: Buffer.concat(chunks), answeredMs };
}
