import type { APIGatewayProxyEvent } from 'aws-lambda';
import { routeEvent } from '../local/apiGatewayEvent';
import { invocationContext } from '../local/invocationContext';
import { type BufferedResponse, invokeStreaming as invokeBuffered } from '../local/invokeStreaming';
import type { StreamingLambdaHandler } from '../shared/http/adapter/lambdaStreaming';

export type BenchResponse = BufferedResponse;

/** A POST /api/screenshot event as API Gateway would send it. */
export function screenshotEvent(apiKey: string, body: unknown): APIGatewayProxyEvent {
  return routeEvent('screenshot', { bearer: apiKey, body });
}

/** The screenshot handler invoked as Lambda would, with the whole streamed body read. */
export function invokeStreaming(
  handler: StreamingLambdaHandler,
  event: APIGatewayProxyEvent,
): Promise<BenchResponse> {
  return invokeBuffered(handler, event, invocationContext());
}

/**
 * The latency of an image answer: until the client had the whole image, not until the handler returned (it then
 * prepares the next tab before Lambda would freeze it, while the client already holds its image).
 */
export function answeredMs(response: BenchResponse, what: string): number {
  expectImage(response, what);
  return response.answeredMs;
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
