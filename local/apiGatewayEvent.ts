import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { type OperationName, operationOf, ROUTES, type RouteDefinition } from '../shared/routes';

export interface HttpRequestParts {
  method: string;
  /** Path as requested, e.g. /api/keys/key_123. */
  path: string;
  /** API Gateway resource template, e.g. /api/keys/{id}. */
  resource: string;
  pathParameters?: Record<string, string> | null;
  query?: URLSearchParams;
  headers?: Record<string, string>;
  body?: string | null;
  sourceIp?: string;
}

/**
 * An API Gateway REST (v1) Lambda-proxy event, as the deployed API sends it. The local server and the handler tests
 * both build events here, so the handlers never see anything Lambda would not give them.
 */
export function apiGatewayEvent(parts: HttpRequestParts): APIGatewayProxyEvent {
  // API Gateway sets X-Forwarded-Proto itself, whatever the client sent; the local server speaks plain HTTP.
  const headers: Record<string, string> = { ...parts.headers, 'x-forwarded-proto': 'http' };
  const multiValueHeaders = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]]));
  const query = parts.query && [...parts.query.keys()].length > 0 ? parts.query : undefined;
  const now = Date.now();
  return {
    resource: parts.resource,
    path: parts.path,
    httpMethod: parts.method,
    headers,
    multiValueHeaders,
    queryStringParameters: query ? Object.fromEntries(query.entries()) : null,
    multiValueQueryStringParameters: query ? multiValues(query) : null,
    pathParameters: parts.pathParameters ?? null,
    stageVariables: null,
    body: parts.body ?? null,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: null,
      protocol: 'HTTP/1.1',
      httpMethod: parts.method,
      // As a custom domain without a base path: the API at the root of the local server's origin.
      path: parts.path,
      domainName: headers.host ?? '127.0.0.1',
      stage: 'local',
      requestId: randomUUID(),
      requestTimeEpoch: now,
      resourceId: 'local',
      resourcePath: parts.resource,
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: parts.sourceIp ?? '127.0.0.1',
        user: null,
        userAgent: headers['user-agent'] ?? null,
        userArn: null,
      },
    },
  };
}

export interface RouteEventOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  bearer?: string;
  /** Serialised as JSON unless already a string. */
  body?: unknown;
  pathParameters?: Record<string, string>;
  /** Query parameters, as the client's query string would carry them. */
  query?: Record<string, string>;
  headers?: Record<string, string>;
}

/**
 * The event the deployed API would send for a route of the table, named by its operation (or its handler: the first
 * route of it), with a JSON body (tests and the benchmark).
 */
export function routeEvent(
  name: OperationName | RouteDefinition['handler'],
  options: RouteEventOptions = {},
): APIGatewayProxyEvent {
  const route =
    ROUTES.find((candidate) => operationOf(candidate) === name) ??
    ROUTES.find((candidate) => candidate.handler === name);
  if (!route) throw new Error(`no route ${name}`);
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => options.pathParameters?.[name] ?? '');
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`;
  const body =
    options.body === undefined
      ? null
      : typeof options.body === 'string'
        ? options.body
        : JSON.stringify(options.body);
  return apiGatewayEvent({
    method: route.method,
    path,
    resource: route.path,
    pathParameters: options.pathParameters ?? null,
    query: new URLSearchParams(options.query),
    headers,
    body,
  });
}

/** Every name's values in order, in one pass (getAll per name is quadratic in a long query string: red team). */
function multiValues(query: URLSearchParams): Record<string, string[]> {
  const values = new Map<string, string[]>();
  for (const [name, value] of query) {
    const seen = values.get(name);
    if (seen) seen.push(value);
    else values.set(name, [value]);
  }
  return Object.fromEntries(values);
}
