import { type HttpRoute, jsonResponse } from '../http/types';
import { openApiDocument } from './document';

/** GET /api/openapi.json: public, the same for everyone, so caches may keep it a few minutes. */
export const getOpenApi: HttpRoute = async () =>
  jsonResponse(200, openApiDocument(), { 'Cache-Control': 'public, max-age=300' });
