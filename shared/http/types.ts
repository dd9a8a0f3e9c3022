/**
 * HTTP as the routes see it: plain values, whatever carried the request (API Gateway REST deployed, the local
 * server through the same adapter). Only `shared/http/adapter/` knows where they came from.
 */
export interface HttpRequest {
  method: string;
  path: string;
  /** Header names in lower case. */
  headers: Readonly<Record<string, string>>;
  pathParameters: Readonly<Record<string, string>>;
  /** Query parameters; a repeated name keeps its last value here, and is listed in `repeatedQueryNames`. */
  query: Readonly<Record<string, string>>;
  /** Names that appear more than once in the query (a signed link refuses them). */
  repeatedQueryNames?: readonly string[];
  /** The body as text ('' when there is none). */
  body: string;
  requestId: string;
  /** The API's public base URL as the client called it (`https://host/stage`), for the links an answer gives. */
  baseUrl: string;
  /** The latest the request may run, ms since epoch: what the runtime lets the function use, less a reserve. */
  deadline: number;
  /** Aborted when the client hangs up, where the runtime reports it. */
  signal: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer | string;
  /** Called by the adapter when the body could not be handed to the client (it hung up), where it can tell. */
  undelivered?: () => Promise<unknown>;
}

/** No answer of the API is for a browser to sniff into something else (an image or an error into a document). */
export const NO_SNIFF = { 'X-Content-Type-Options': 'nosniff' } as const;

/** A route: a plain function from request to response. Errors it throws are mapped by the adapter. */
export type HttpRoute = (request: HttpRequest) => Promise<HttpResponse>;

const JSON_HEADERS = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' };

export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): HttpResponse {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}
