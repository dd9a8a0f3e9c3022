/**
 * Every route of the API, once. The CDK stack makes one function per entry (from `functions/<handler>.ts`) and the
 * local server dispatches with the same table, so the two cannot disagree about what exists.
 */
export interface RouteDefinition {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** API Gateway resource path; `{id}` is a path parameter. */
  path: string;
  /** File name in `functions/` and the function's logical name in the stack. */
  handler:
    | 'screenshot'
    | 'listKeys'
    | 'createKey'
    | 'updateKey'
    | 'deleteKey'
    | 'getCredits'
    | 'getUsage'
    | 'getOpenApi';
  /** Session token (key management), API key (screenshot), or none (the public API description). */
  auth: 'session' | 'apiKey' | 'none';
  /** A response-streaming Lambda (API Gateway STREAM transfer mode). */
  streaming: boolean;
}

export const ROUTES: readonly RouteDefinition[] = [
  { method: 'POST', path: '/api/screenshot', handler: 'screenshot', auth: 'apiKey', streaming: true },
  { method: 'GET', path: '/api/keys', handler: 'listKeys', auth: 'session', streaming: false },
  { method: 'POST', path: '/api/keys', handler: 'createKey', auth: 'session', streaming: false },
  { method: 'PATCH', path: '/api/keys/{id}', handler: 'updateKey', auth: 'session', streaming: false },
  { method: 'DELETE', path: '/api/keys/{id}', handler: 'deleteKey', auth: 'session', streaming: false },
  { method: 'GET', path: '/api/credits', handler: 'getCredits', auth: 'session', streaming: false },
  { method: 'GET', path: '/api/usage', handler: 'getUsage', auth: 'session', streaming: false },
  { method: 'GET', path: '/api/openapi.json', handler: 'getOpenApi', auth: 'none', streaming: false },
];
