import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { jwksOf, LOCAL_CLIENT_ID, LOCAL_ISSUER, type SigningKey, signAccessToken } from '../../local/idp';

/** A freshly generated signing key, as the local identity provider or an attacker would have. */
export function newSigningKey(): SigningKey {
  return { kid: randomUUID(), privateKey: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey };
}

/** A test identity provider: real RS256 tokens, and the settings the verifier needs to trust them. */
export function testIdentityProvider() {
  const key = newSigningKey();
  return {
    key,
    jwks: jwksOf(key),
    env: { SESSION_ISSUER: LOCAL_ISSUER, SESSION_CLIENT_ID: LOCAL_CLIENT_ID },
    /** A valid access token for the account, with any claim overridden. */
    token: (accountId: string, claims: Record<string, unknown> = {}) =>
      signAccessToken(key, { sub: accountId, ...claims }),
  };
}
