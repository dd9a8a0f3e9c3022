import { UnauthorizedError } from '../errors';
import { KEY_ID_PATTERN } from '../keys/apiKey';
import type { KeyIdentity, KeyStore } from '../keys/keyStore';
import type { SecretCipher } from '../signing/secretCipher';
import { signatureMatches } from '../signing/signedLink';

/** The credential of a signed link: the key it names, its signature, and the canonical query the signature covers. */
export interface SignedCredential {
  keyId: string | undefined;
  signature: string | undefined;
  canonicalQuery: string;
}

const INVALID = 'Invalid signature';

/**
 * Authenticates a signed link: the key must exist, the HMAC of the canonical query under its signing secret must
 * match (compared in constant time), and the key must be active. Any doubt is a 401; that a key is revoked is said
 * only to a caller whose signature proved they hold its secret.
 */
export async function authenticateSignedLink(
  credential: SignedCredential,
  keys: KeyStore,
  cipher: SecretCipher,
): Promise<KeyIdentity> {
  const { keyId, signature, canonicalQuery } = credential;
  if (!keyId || !signature)
    throw new UnauthorizedError('Missing signature: a signed link needs keyId and signature');
  if (!KEY_ID_PATTERN.test(keyId)) throw new UnauthorizedError(INVALID);
  const key = await keys.findSigningKey(keyId);
  if (!key) throw new UnauthorizedError(INVALID);
  const secret = await cipher.open(key.sealedSigningSecret, keyId);
  if (secret === undefined || !signatureMatches(secret, canonicalQuery, signature)) {
    throw new UnauthorizedError(INVALID);
  }
  if (!key.identity.isActive) throw new UnauthorizedError('API key has been revoked');
  return key.identity;
}
