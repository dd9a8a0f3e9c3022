import { finished } from 'node:stream/promises';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { logger, withLogKeys } from '../../logger';
import { RESPONSE_RESERVE_MS } from '../../timing';
import { type ErrorStyle, errorResponse } from '../errorAnswer';
import { type HttpRequest, type HttpResponse, type HttpRoute, NO_SNIFF } from '../types';
import { type InvocationContext, type StreamingLambdaHandler, streamingRuntime } from './lambdaStreaming';

/**
 * The one HTTP adapter: API Gateway REST proxy events (buffered, and streaming for the screenshot route) in, plain
 * HttpRequest to the route, its HttpResponse (or error) back out. The Lambda entries, the local server and the
 * handler tests all go through here, so what is tested is what is deployed.
 */

export type BufferedLambdaHandler = (
  event: APIGatewayProxyEvent,
  context: InvocationContext,
) => Promise<APIGatewayProxyResult>;

export interface AdapterOptions {
  /** The error body style of the route (docs/api.md, "Errors"). */
  errors: ErrorStyle;
  /**
   * Work left after the answer was sent (the renderer preparing its next tab). Lambda freezes the process as soon
   * as the handler returns, so the handler awaits it once the client has its answer.
   */
  afterResponse?: () => Promise<void>;
}

/** The smallest time a capture is given, even when the function has less left: it then fails fast and cleanly. */
const MIN_BUDGET_MS = 1_000;

/** A buffered route: the whole answer in one APIGatewayProxyResult. */
export function bufferedHandler(route: HttpRoute, options: AdapterOptions): BufferedLambdaHandler {
  return (event, context) =>
    withLogKeys({ requestId: context.awsRequestId }, async () => {
      const answer = await run(route, httpRequest(event, context, new AbortController().signal), options);
      const base64 = Buffer.isBuffer(answer.body);
      return {
        statusCode: answer.status,
        headers: answer.headers,
        body: base64 ? (answer.body as Buffer).toString('base64') : (answer.body as string),
        isBase64Encoded: base64,
      };
    });
}

/**
 * A streaming route (API Gateway STREAM transfer mode): status and headers first, then the body. A client that hangs
 * up, as the runtime reports it by closing the stream, aborts the request's signal while the route runs, and makes
 * the answer undelivered (its `undelivered` callback runs) when it goes away before the body was handed over.
 */
export function streamingHandler(route: HttpRoute, options: AdapterOptions): StreamingLambdaHandler {
  // Every line of the request, the answer's delivery and what follows it included, names the request.
  return (event, responseStream, context) =>
    withLogKeys({ requestId: context.awsRequestId }, async () => {
      const hungUp = new AbortController();
      const onClose = () => hungUp.abort();
      // The runtime closes the stream when the client goes away; before we end it, that is a hang-up.
      responseStream.once('close', onClose);
      responseStream.once('error', onClose);
      try {
        const answer = await run(route, httpRequest(event, context, hungUp.signal), options);
        const body = Buffer.isBuffer(answer.body) ? answer.body : Buffer.from(answer.body);
        responseStream.off('close', onClose);
        if (hungUp.signal.aborted) {
          logger.info('Client hung up; answer not sent', { status: answer.status });
          // Nothing to send, but the runtime still expects the stream to end.
          responseStream.end();
          await answer.undelivered?.();
          return;
        }
        const out = streamingRuntime().HttpResponseStream.from(responseStream, {
          statusCode: answer.status,
          // A 304 has no body, and a Content-Length there would have to be the image's own (RFC 9110, 8.6).
          headers:
            answer.status === 304
              ? answer.headers
              : { ...answer.headers, 'Content-Length': String(body.length) },
        });
        out.end(body);
        // A client that hung up is not a server error, and there is no one left to send an error answer to.
        await finished(out).catch(async (error) => {
          logger.warn('Response not delivered', { error });
          await answer.undelivered?.();
        });
      } finally {
        await options.afterResponse?.();
      }
    });
}

/** Runs the route; an error it throws becomes its answer through the one mapping. */
async function run(route: HttpRoute, request: HttpRequest, options: AdapterOptions): Promise<HttpResponse> {
  let answer: HttpResponse;
  try {
    answer = await route(request);
  } catch (error) {
    answer = errorResponse(error, options.errors);
  }
  logger.info('request', { method: request.method, path: request.path, status: answer.status });
  // On every answer of every route: the session routes' answers (keys, the webhook secret) lacked it, reached straight
  // on the API Gateway URL, where the CDN's security headers are not added (red team, round 31).
  return { ...answer, headers: { ...NO_SNIFF, ...answer.headers } };
}

function httpRequest(
  event: APIGatewayProxyEvent,
  context: InvocationContext,
  signal: AbortSignal,
): HttpRequest {
  const headers: Record<string, string> = {};
  // API Gateway passes header names as the client sent them; HTTP ignores their case.
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  // No prototype: a parameter named `__proto__` is kept as one (a signed link covers it), not swallowed by a setter.
  const query: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
    if (value !== undefined) query[name] = value;
  }
  const repeatedQueryNames = Object.entries(event.multiValueQueryStringParameters ?? {}).flatMap(
    ([name, values]) => ((values?.length ?? 0) > 1 ? [name] : []),
  );
  const pathParameters: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.pathParameters ?? {})) {
    if (value !== undefined) pathParameters[name] = value;
  }
  const raw = event.body ?? '';
  const now = Date.now();
  return {
    method: event.httpMethod,
    path: event.path,
    headers,
    pathParameters,
    query,
    repeatedQueryNames,
    body: event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw,
    requestId: context.awsRequestId,
    baseUrl: baseUrlOf(event, headers),
    deadline: now + Math.max(MIN_BUDGET_MS, context.getRemainingTimeInMillis() - RESPONSE_RESERVE_MS),
    signal,
  };
}

/**
 * The API's public base URL as the client called it: the host API Gateway answered on, and the stage's path when the
 * request came through it (requestContext.path is the event's path behind that prefix; a custom domain has none).
 */
function baseUrlOf(event: APIGatewayProxyEvent, headers: Record<string, string>): string {
  const { domainName, path } = event.requestContext;
  const host = domainName ?? headers.host ?? 'localhost';
  const prefix = path?.endsWith(event.path) ? path.slice(0, path.length - event.path.length) : '';
  const scheme = headers['x-forwarded-proto'] ?? 'https';
  return `${scheme}://${host}${prefix}`;
}
