import type { KeyManagement } from '../keys/keyManagement';
import { bearerCredential, jsonBody } from './request';
import { type HttpRoute, jsonResponse } from './types';

export type KeyRouteName = keyof KeyManagement;

/** The session-token routes over HTTP: the token, the key id and the body in, JSON out. */
export function keyRoutes(keys: KeyManagement): Record<KeyRouteName, HttpRoute> {
  const token = bearerCredential;
  const keyId = (request: Parameters<HttpRoute>[0]) => request.pathParameters.id ?? '';
  return {
    listKeys: async (request) => jsonResponse(200, await keys.listKeys(token(request))),
    createKey: async (request) => jsonResponse(201, await keys.createKey(token(request), jsonBody(request))),
    updateKey: async (request) =>
      jsonResponse(200, await keys.updateKey(token(request), keyId(request), jsonBody(request))),
    deleteKey: async (request) => jsonResponse(200, await keys.deleteKey(token(request), keyId(request))),
    getCredits: async (request) => jsonResponse(200, await keys.getCredits(token(request))),
  };
}
