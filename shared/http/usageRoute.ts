import type { GetUsage } from '../usage/usageHistory';
import { bearerCredential } from './request';
import { type HttpRoute, jsonResponse } from './types';

/** GET /api/usage: the session token and the query parameters in, the usage history out. */
export function usageRoute(getUsage: GetUsage): HttpRoute {
  return async (request) => jsonResponse(200, await getUsage(bearerCredential(request), request.query));
}
