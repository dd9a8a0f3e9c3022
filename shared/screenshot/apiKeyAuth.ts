import { UnauthorizedError } from '../errors';
import { hashApiKey, isWellFormedApiKey } from '../keys/apiKey';
import type { KeyIdentity, KeyStore } from '../keys/keyStore';

/** Authenticates an API key (the Bearer credential) with one consistent read; any doubt is a 401. */
export async function authenticateApiKey(key: string | undefined, keys: KeyStore): Promise<KeyIdentity> {
  if (!key) throw new UnauthorizedError('Missing API key: send Authorization: Bearer <API key>');
  if (!isWellFormedApiKey(key)) throw new UnauthorizedError('Invalid API key');
  const identity = await keys.findByHash(hashApiKey(key));
  if (!identity) throw new UnauthorizedError('Invalid API key');
  if (!identity.isActive) throw new UnauthorizedError('API key has been revoked');
  return identity;
}
