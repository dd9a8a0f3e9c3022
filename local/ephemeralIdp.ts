import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { jwksOf, LOCAL_CLIENT_ID, LOCAL_ISSUER, type SigningKey, signAccessToken } from './idp';

/** A freshly generated signing key, as the local identity provider or an attacker would have. */
export function newSigningKey(): SigningKey {
  return { kid: randomUUID(), privateKey: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey };
}

/**
 * An identity provider that lives in memory only (tests and the benchmark): real RS256 tokens from a generated key,
 * and the settings the verifier needs to trust them.
 */
export function ephemeralIdentityProvider() {
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
