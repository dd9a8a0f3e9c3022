import { PassThrough } from 'node:stream';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { PRELUDE_EVENT, type ResponsePrelude, type StreamingHandler } from '../shared/http/streaming';

export interface BufferedResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Invokes a streaming handler as the Lambda runtime does (through the stand-in) and reads the whole streamed body,
 * which is what a client waits for. Tests and the benchmark use it; the local server pipes instead.
 */
export async function invokeStreaming(
  handler: StreamingHandler,
  event: APIGatewayProxyEvent,
  context: Context,
): Promise<BufferedResponse> {
  const stream = new PassThrough();
  let prelude: ResponsePrelude | undefined;
  stream.once(PRELUDE_EVENT, (p: ResponsePrelude) => {
    prelude = p;
  });
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  await handler(event, stream, context);
  if (!prelude) throw new Error('the handler sent no status and headers');
  return { status: prelude.statusCode, headers: prelude.headers, body: Buffer.concat(chunks) };
}
