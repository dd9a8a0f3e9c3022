import { PassThrough } from 'node:stream';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { lambdaContext } from '../local/lambdaContext';
import { PRELUDE_EVENT, type ResponsePrelude, type StreamingHandler } from '../shared/http/streaming';
import { eventFor } from '../test/helpers/events';

export interface BenchResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** A POST /api/screenshot event as API Gateway would send it. */
export function screenshotEvent(apiKey: string, body: unknown): APIGatewayProxyEvent {
  return eventFor('screenshot', { bearer: apiKey, body });
}

/**
 * Invokes a streaming handler the way the Lambda runtime does, and reads the whole streamed body (what the
 * client waits for).
 */
export async function invokeStreaming(
  handler: StreamingHandler,
  event: APIGatewayProxyEvent,
): Promise<BenchResponse> {
  const stream = new PassThrough();
  let prelude: ResponsePrelude | undefined;
  stream.once(PRELUDE_EVENT, (p: ResponsePrelude) => {
    prelude = p;
  });
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  await handler(event, stream, lambdaContext('screenshot'));
  if (!prelude) throw new Error('the handler sent no status and headers');
  return { status: prelude.statusCode, headers: prelude.headers, body: Buffer.concat(chunks) };
}

/** Fails loudly on anything but an image: a benchmark of error responses would be meaningless. */
export function expectImage(response: BenchResponse, what: string): Buffer {
  if (response.status !== 200) {
    throw new Error(
      `${what}: expected 200, got ${response.status} ${response.body.toString('utf8').slice(0, 300)}`,
    );
  }
  return response.body;
}
