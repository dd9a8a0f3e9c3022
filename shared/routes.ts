/**
 * Every route of the API, once. The CDK stack makes one function per entry (from `functions/<handler>.ts`) and the
 * local server dispatches with the same table, so the two cannot disagree about what exists.
 */
export interface RouteDefinition {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** API Gateway resource path; `{id}` is a path parameter. */
  path: string;
  /**
   * File name in `functions/` and the function's logical name in the stack. Routes may share one: the signed GET of
   * /api/screenshot runs in the screenshot function, beside the POST, and the webhook secret's two routes share one
   * (each function adds a metric to the stack's error and throttle alarms, which take at most 10).
   */
  handler:
    | 'screenshot'
    | 'listKeys'
    | 'createKey'
    | 'updateKey'
    | 'deleteKey'
    | 'getCredits'
    | 'getUsage'
    | 'webhookSecret'
    | 'getOpenApi'
    | 'mcp'
    | 'getJob'
    | 'listJobs'
    | 'createBatch'
    | 'getBatch';
  /**
   * Session token (key management, usage, the webhook secret), API key (screenshot), a signed link's keyId and
   * signature (the screenshot GET), or none (the public API description).
   */
  auth: 'session' | 'apiKey' | 'signature' | 'none';
  /** A response-streaming Lambda (API Gateway STREAM transfer mode). */
  streaming: boolean;
  /** The operation's name (its OpenAPI operationId) where it is not the handler's, because the handler is shared. */
  operation?: 'signedScreenshot' | 'getWebhookSecret' | 'rotateWebhookSecret';
}

/** Handlers each of whose routes names its own operation: no operation bears the handler's name. */
type HandlerOfNamedOperations = 'webhookSecret';

/** The name of an operation (its OpenAPI operationId). */
export type OperationName =
  | NonNullable<RouteDefinition['operation']>
  | Exclude<RouteDefinition['handler'], HandlerOfNamedOperations>;

/** The name of a route's operation: its own, or its handler's. */
export function operationOf(route: RouteDefinition): OperationName {
  if (route.operation) return route.operation;
  if (route.handler === 'webhookSecret') throw new Error(`${route.method} ${route.path} names no operation`);
  return route.handler;
}

export const ROUTES: readonly RouteDefinition[] = [
  { method: 'POST', path: '/api/screenshot', handler: 'screenshot', auth: 'apiKey', streaming: true },
  {
    method: 'GET',
    path: '/api/screenshot',
    handler: 'screenshot',
    auth: 'signature',
    streaming: true,
    operation: 'signedScreenshot',
  },
  { method: 'GET', path: '/api/keys', handler: 'listKeys', auth: 'session', streaming: false },
  { method: 'POST', path: '/api/keys', handler: 'createKey', auth: 'session', streaming: false },
  { method: 'PATCH', path: '/api/keys/{id}', handler: 'updateKey', auth: 'session', streaming: false },
  { method: 'DELETE', path: '/api/keys/{id}', handler: 'deleteKey', auth: 'session', streaming: false },
  { method: 'GET', path: '/api/credits', handler: 'getCredits', auth: 'session', streaming: false },
  { method: 'GET', path: '/api/usage', handler: 'getUsage', auth: 'session', streaming: false },
  {
    method: 'GET',
    path: '/api/webhook-secret',
    handler: 'webhookSecret',
    auth: 'session',
    streaming: false,
    operation: 'getWebhookSecret',
  },
  {
    method: 'POST',
    path: '/api/webhook-secret/rotate',
    handler: 'webhookSecret',
    auth: 'session',
    streaming: false,
    operation: 'rotateWebhookSecret',
  },
  { method: 'GET', path: '/api/openapi.json', handler: 'getOpenApi', auth: 'none', streaming: false },
  { method: 'POST', path: '/mcp', handler: 'mcp', auth: 'apiKey', streaming: true },
  { method: 'GET', path: '/api/jobs/{id}', handler: 'getJob', auth: 'apiKey', streaming: false },
  { method: 'GET', path: '/api/jobs', handler: 'listJobs', auth: 'session', streaming: false },
  { method: 'POST', path: '/api/batches', handler: 'createBatch', auth: 'apiKey', streaming: false },
  { method: 'GET', path: '/api/batches/{id}', handler: 'getBatch', auth: 'apiKey', streaming: false },
];
