import type { APIGatewayProxyEvent } from 'aws-lambda';
import { apiGatewayEvent } from '../../local/apiGatewayEvent';
import { ROUTES, type RouteDefinition } from '../../shared/routes';

export interface EventOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  bearer?: string;
  /** Serialised as JSON unless already a string. */
  body?: unknown;
  pathParameters?: Record<string, string>;
  headers?: Record<string, string>;
}

/** The API Gateway REST proxy event the deployed API would send for this route. */
export function eventFor(
  handler: RouteDefinition['handler'],
  options: EventOptions = {},
): APIGatewayProxyEvent {
  const route = ROUTES.find((candidate) => candidate.handler === handler);
  if (!route) throw new Error(`no route ${handler}`);
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
    headers,
    body,
  });
}
