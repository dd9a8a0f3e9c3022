import { UnauthorizedError, ValidationError } from '../errors';
import { KEY_ID_PATTERN } from '../keys/apiKey';
import type { KeyIdentity, KeyStore } from '../keys/keyStore';
import type { SecretCipher } from '../signing/secretCipher';
import { signatureMatches } from '../signing/signedLink';

/** The credential of a signed link: the key it names, its signature, and the canonical query the signature covers. */
export interface SignedCredential {
  keyId: string | undefined;
  signature: string | undefined;
  /** Built from one value per name (the last one). */
  canonicalQuery: string;
  /** Names the query repeats: the signature covers only one of their values. */
  repeatedNames?: readonly string[];
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
  // Refused here, before the link's budget is counted: anyone holding a link could otherwise repeat one of its names
  // in front of it (the signature covers the last value) and spend the key's budget with 400s (red team, round 13).
  const repeated = credential.repeatedNames ?? [];
  if (repeated.length > 0) {
    throw new ValidationError(
      repeated.map((name) => ({
        code: 'duplicate_parameter',
        path: [name],
        message: `The parameter ${name} appears more than once; give each parameter once`,
      })),
      'Invalid request body',
    );
  }
  return key.identity;
}
