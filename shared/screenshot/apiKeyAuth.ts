import type { APIGatewayProxyEvent } from 'aws-lambda';
import { UnauthorizedError } from '../errors';
import { bearerCredential } from '../http/request';
import { hashApiKey, isWellFormedApiKey } from '../keys/apiKey';
import type { KeyIdentity, KeyStore } from '../keys/keyStore';

/** Authenticates `Authorization: Bearer sk_live_...` with one consistent read; any doubt is a 401. */
export async function authenticateApiKey(event: APIGatewayProxyEvent, keys: KeyStore): Promise<KeyIdentity> {
  const key = bearerCredential(event);
  if (!key) throw new UnauthorizedError('Missing API key: send Authorization: Bearer <API key>');
  if (!isWellFormedApiKey(key)) throw new UnauthorizedError('Invalid API key');
  const identity = await keys.findByHash(hashApiKey(key));
  if (!identity) throw new UnauthorizedError('Invalid API key');
  if (!identity.isActive) throw new UnauthorizedError('API key has been revoked');
  return identity;
}
