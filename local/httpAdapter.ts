import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Writable } from 'node:stream';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { MAX_ANSWER_BYTES } from '../shared/capture/rendererProtocol';
import {
  AppError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  StartingError,
} from '../shared/errors';
import type { InvocationContext } from '../shared/http/adapter/lambdaStreaming';
import {
  PRELUDE_EVENT,
  type ResponsePrelude,
  type StreamingLambdaHandler,
} from '../shared/http/adapter/lambdaStreaming';
import { type ErrorStyle, errorAnswer } from '../shared/http/errorAnswer';
import { bearerCredential } from '../shared/http/request';
import { NO_SNIFF } from '../shared/http/types';
import { logger } from '../shared/logger';
import { ROUTES, type RouteDefinition } from '../shared/routes';
import { MAX_HTML_BODY_BYTES } from '../shared/screenshot/bodySize';
import { MANAGEMENT_FUNCTION_TIMEOUT_MS } from '../shared/timing';
import type { LambdaHandlers } from '../shared/wiring/lambdaHandlers';
import { ERROR_STYLES } from '../shared/wiring/lambdaHandlers';
import { apiGatewayEvent } from './apiGatewayEvent';
import { invocationContext } from './invocationContext';

/**
 * The largest body any handler accepts (a screenshot body holding an `html` document): anything larger is refused
 * before it is buffered. API Gateway takes up to 10 MB; the handlers enforce their own limits, most much smaller.
 */
const MAX_REQUEST_BYTES = MAX_HTML_BODY_BYTES;

/** Extra non-API paths the local server answers (JWKS, dashboard); returns false when it does not own the path. */
export type ExtraRoute = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

/**
 * Plays API Gateway for the local server: matches the route table, turns the HTTP request into a REST proxy event,
 * runs the same handler the Lambda runs, and writes its answer (buffered or streamed) back.
 */
export interface AdapterOptions {
  /** Non-API paths (JWKS, dashboard, API description), tried before the route table. */
  extra?: ExtraRoute[];
  /** How long a client may take to take a slice of an answer (SEND_STALL_MS; shortened by tests only). */
  sendStallMs?: number;
}

/**
 * A client that does not take a slice of an answer (SEND_SLICE_BYTES, beside what the operating system buffers) in
 * this long is let go, with what its answer holds (up to a 190 MiB image): the local server has no other send timeout
 * (red team, round 17). One that reads at 35 KB/s or more keeps its answer.
 */
export const SEND_STALL_MS = 30_000;

/** Answers go to the socket in slices of this size (views, no copies), so that a slow client's progress shows. */
const SEND_SLICE_BYTES = 1024 * 1024;

/**
 * The longest the local server keeps sending an answer: its largest (MAX_ANSWER_BYTES) at the least pace it allows,
 * a slice per `sendStallMs`, and a minute to spare. A capture's credits stay reserved that long after its deadline.
 */
export function slowestDeliveryMs(sendStallMs = SEND_STALL_MS): number {
  return Math.ceil(MAX_ANSWER_BYTES / SEND_SLICE_BYTES) * sendStallMs + 60_000;
}

/** The listener, and a way to wait for the requests it is still answering (a server that closes must let them end). */
export type LambdaHttpListener = RequestListener & { idle(): Promise<void> };

export function lambdaHttpAdapter(
  handlers: LambdaHandlers,
  options: AdapterOptions = {},
): LambdaHttpListener {
  const extra = options.extra ?? [];
  const sendStallMs = options.sendStallMs ?? SEND_STALL_MS;
  const inFlight = new Set<Promise<void>>();
  const listener: RequestListener = (req, res) => {
    if (refusedWithoutHost(req, res)) return;
    const answering = handle(req, res).catch((error) => {
      if (error instanceof ClientGone) {
        // No one is left to answer, and nothing of ours failed (red team, round 20: ERROR lines at will).
        logger.info('Client hung up before its request body ended', { path: requestPath(req) });
        res.destroy();
        return;
      }
      answerError(req, res, error);
    });
    inFlight.add(answering);
    void answering.finally(() => inFlight.delete(answering));
  };
  return Object.assign(listener, {
    async idle() {
      await Promise.all(inFlight);
    },
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = requestUrl(req);
    for (const route of extra) if (await route(req, res)) return;
    const match = matchRoute(req.method ?? 'GET', url.pathname);
    const requestHeaders = flatHeaders(req);
    // A body is read only for a route that takes one (no GET does), and only from a request that names a Bearer
    // credential where the route takes one: any other is answered without it, and nothing is held (red team: any
    // process of the machine held 73 MB on 64 connections that named no credential, then on signed-link GETs).
    const unread =
      match.route.method === 'GET' ||
      ((match.route.auth === 'apiKey' || match.route.auth === 'session') &&
        bearerCredential({ headers: requestHeaders }) === undefined);
    const body = unread ? declaredWithin(req) : await readBody(req);
    const event = apiGatewayEvent({
      method: match.route.method,
      path: url.pathname,
      resource: match.route.path,
      pathParameters: match.pathParameters,
      query: url.searchParams,
      headers: requestHeaders,
      body,
      sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
    });
    const { handler } = match.route;
    if (handler === 'screenshot' || handler === 'mcp') {
      // No queue here: the use case authenticates first and only then waits for the local capture queue.
      await runStreaming(handlers[handler], event, invocationContext(), res, sendStallMs);
      return;
    }
    const result = await handlers[handler](event, invocationContext(MANAGEMENT_FUNCTION_TIMEOUT_MS));
    const headers = { ...(result.headers as Record<string, string>) };
    const payload = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : Buffer.from(result.body);
    res.writeHead(result.statusCode, { ...headers, 'Content-Length': String(payload.length) });
    res.end(payload);
  }
}

/** Answers every request with 503 and `Retry-After`: the listener of a server that is still starting. */
export const startingListener: RequestListener = (req, res) => {
  if (refusedWithoutHost(req, res)) return;
  answerError(req, res, new StartingError());
};

/**
 * The server's options: Node's own refusal of a request without `Host` has no body, so the listeners answer it in
 * the documented shape instead (refusedWithoutHost).
 */
export const HTTP_SERVER_OPTIONS = { requireHostHeader: false } as const;

/** An HTTP/1.1 request must name its Host (RFC 9112, 3.2); HTTP/1.0 need not. */
class MissingHostError extends AppError {
  constructor() {
    super(400, 'An HTTP/1.1 request must have a Host header');
  }
}

/** Only `Expect: 100-continue` is met (Node answers it); any other expectation fails (RFC 9110, 10.1.1). */
class ExpectationFailedError extends AppError {
  constructor() {
    super(417, 'Only the expectation 100-continue is supported');
  }
}

function refusedWithoutHost(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.httpVersion !== '1.1' || req.headers.host !== undefined) return false;
  closingAnswer(req, res, new MissingHostError());
  return true;
}

/** The server's `checkExpectation` listener: Node's own `417` has no body. */
export function answerUnmetExpectation(req: IncomingMessage, res: ServerResponse): void {
  closingAnswer(req, res, new ExpectationFailedError());
}

/** An error answered before the request was read: its body, if any, is not, so the connection ends with it. */
function closingAnswer(req: IncomingMessage, res: ServerResponse, error: AppError): void {
  res.setHeader('Connection', 'close');
  answerError(req, res, error);
}

/** An error answered in the style of the route the path belongs to. */
function answerError(req: IncomingMessage, res: ServerResponse, error: unknown): void {
  const answer = errorAnswer(error, errorStyle(requestPath(req)));
  if (!res.headersSent) {
    res.writeHead(answer.status, {
      'Content-Type': 'application/json; charset=utf-8',
      // As every answer of the capture routes does (docs/api.md 5.3).
      ...NO_SNIFF,
      ...answer.headers,
    });
  }
  res.end(JSON.stringify(answer.body));
}

/**
 * The style of the routes on `pathname`, read as routing reads it: `//x/api/screenshot` and `/api/./screenshot` reach
 * the screenshot route, so their 405, 413 and 503 answer `{ error }` too (red team, round 20).
 */
function errorStyle(pathname: string): ErrorStyle {
  const capture = ROUTES.some(
    (route) => ERROR_STYLES[route.handler] === 'screenshot' && matchPath(route.path, pathname) !== undefined,
  );
  return capture ? 'screenshot' : 'management';
}

/** The request target as routing reads it (dot segments resolved; the authority of `//host/...` dropped). */
function requestUrl(req: IncomingMessage): URL {
  return URL.parse(req.url ?? '/', 'http://localhost') ?? new URL('http://localhost/');
}

function requestPath(req: IncomingMessage): string {
  return requestUrl(req).pathname;
}

/** The request's body ended early: its client hung up, and no one is left to answer. */
class ClientGone extends Error {}

/**
 * HTTP the server's parser refuses (an unknown method, a header too large, headers not sent in time ...) answered in
 * the documented shape, `{ message }`, and the connection closed; Node's own answer has no body (red team, round 20).
 */
export function answerClientErrors(server: Server): void {
  // As Node's own handler, nothing is written into an answer already under way on the connection (a pipelined
  // request's): each connection's open answers are kept here rather than read from Node's internals.
  const open = new WeakMap<Duplex, Set<ServerResponse>>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const answers = open.get(req.socket) ?? new Set<ServerResponse>();
    open.set(req.socket, answers.add(res));
    res.once('close', () => answers.delete(res));
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const answering = [...(open.get(socket) ?? [])].some((res) => res.headersSent);
    answerClientError(error, socket, answering);
  });
}

function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, answering: boolean): void {
  if (error.code === 'ECONNRESET' || !socket.writable || answering) {
    socket.destroy();
    return;
  }
  const [status, reason, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'Request header fields too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'Request timeout']
        : [400, 'Bad Request', 'Bad request'];
  const body = JSON.stringify({ message });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    // Its descriptor freed once the answer is sent, not held for a client that never reads it.
    () => socket.destroy(),
  );
}

function matchRoute(
  method: string,
  pathname: string,
): { route: RouteDefinition; pathParameters: Record<string, string> | null } {
  const onPath = ROUTES.flatMap((route) => {
    const params = matchPath(route.path, pathname);
    return params ? [{ route, pathParameters: params }] : [];
  });
  if (onPath.length === 0) throw new NotFoundError(`No route for ${pathname}`);
  const match = onPath.find((candidate) => candidate.route.method === method);
  if (!match) throw new MethodNotAllowedError(onPath.map((candidate) => candidate.route.method));
  return {
    route: match.route,
    pathParameters: Object.keys(match.pathParameters).length ? match.pathParameters : null,
  };
}

function matchPath(template: string, pathname: string): Record<string, string> | undefined {
  const want = template.split('/');
  const got = pathname.replace(/\/+$/, '').split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, part] of want.entries()) {
    const actual = got[i] ?? '';
    const param = /^\{(\w+)\}$/.exec(part)?.[1];
    if (param) {
      if (actual === '') return undefined;
      // A malformed escape (`%FF`) names no resource: 404, as API Gateway answers, never a 500.
      const decoded = safeDecode(actual);
      if (decoded === undefined) return undefined;
      params[param] = decoded;
    } else if (part !== actual) return undefined;
  }
  return params;
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** No body, after checking the size a request declares: one larger than any route takes is still 413. */
function declaredWithin(req: IncomingMessage): null {
  if (Number(req.headers['content-length'] ?? 0) > MAX_REQUEST_BYTES)
    throw new PayloadTooLargeError(MAX_REQUEST_BYTES);
  return null;
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) throw new PayloadTooLargeError(MAX_REQUEST_BYTES);
      chunks.push(chunk);
    }
  } catch (error) {
    // Node ends the body of a client that hung up with `aborted` (ECONNRESET).
    if ((error as NodeJS.ErrnoException).code === 'ECONNRESET') throw new ClientGone();
    throw error;
  }
  return chunks.length ? Buffer.concat(chunks).toString('utf8') : null;
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** Runs a streaming handler with the stand-in runtime, writing what it streams to the HTTP response. */
async function runStreaming(
  handler: StreamingLambdaHandler,
  event: APIGatewayProxyEvent,
  context: InvocationContext,
  res: ServerResponse,
  sendStallMs: number,
): Promise<void> {
  const stream = responseStream(res, sendStallMs);
  await handler(event, stream, context);
  if (!stream.writableEnded) stream.end();
}

/**
 * The response as the handler's stream. A write is done once the socket took it, and the end once the whole answer
 * was handed to the operating system, so the handler sees its answer delivered only then. A client that hangs up
 * before that, or stalls for `sendStallMs`, closes the stream early: a capture still running stops, and
 * an answer being sent counts as undelivered (not charged).
 */
function responseStream(res: ServerResponse, sendStallMs: number): Writable {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      sendInSlices(res, chunk, sendStallMs).then(() => done(), done);
    },
    final(done) {
      res.end(() => done());
    },
  });
  stream.once(PRELUDE_EVENT, (prelude: ResponsePrelude) =>
    res.writeHead(prelude.statusCode, prelude.headers),
  );
  res.once('close', () => {
    if (!res.writableFinished) stream.destroy();
  });
  return stream;
}

/** Writes `chunk` a slice at a time, each once the client took the one before; a client gone ends it early. */
async function sendInSlices(res: ServerResponse, chunk: Buffer, sendStallMs: number): Promise<void> {
  for (let at = 0; at < chunk.length && !res.destroyed; at += SEND_SLICE_BYTES) {
    if (!res.write(chunk.subarray(at, at + SEND_SLICE_BYTES))) await drained(res, sendStallMs);
  }
}

/** Resolves once the socket took what was written, or the response closed; a client that stalls is let go. */
function drained(res: ServerResponse, sendStallMs: number): Promise<void> {
  return new Promise((resolve) => {
    const stalled = setTimeout(() => res.destroy(), sendStallMs);
    const taken = () => {
      clearTimeout(stalled);
      res.off('drain', taken);
      res.off('close', taken);
      resolve();
    };
    res.once('drain', taken);
    res.once('close', taken);
  });
}
