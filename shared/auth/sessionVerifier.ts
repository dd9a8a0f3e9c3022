import { JwtVerifier } from 'aws-jwt-verify';
import { validateCognitoJwtFields } from 'aws-jwt-verify/cognito-verifier';
import { JwtExpiredError } from 'aws-jwt-verify/error';
import type { Jwks } from 'aws-jwt-verify/jwk';
import type { SessionConfig } from '../config';
import { UnauthorizedError } from '../errors';

/** Port: turns a session token into the account id it was issued for, or throws UnauthorizedError. */
export interface SessionVerifier {
  accountIdOf(token: string | undefined): Promise<string>;
}

/** An account id (a token's `sub`): Cognito's is a UUID, the local identity provider's at most this long. */
export const MAX_ACCOUNT_ID_LENGTH = 128;
/** The longest an access token of Cognito may live (its app client's setting, at most a day). */
const MAX_TOKEN_LIFETIME_SECONDS = 86_400;
/** How far ahead of our clock a token's issue time may be: the identity provider's clock and ours differ a little. */
const CLOCK_SKEW_SECONDS = 300;

/**
 * Verifies Cognito-style access tokens: RS256 signature against the JWKS, expiry, issuer, `token_use` = access and
 * `client_id`. Deployed, the JWKS is fetched from the user pool and cached for the life of the warm instance; the
 * local identity provider hands its JWKS in directly (`jwks`). The checks are the same either way.
 */
export function createSessionVerifier(config: SessionConfig, jwks?: Jwks): SessionVerifier {
  const verifier = JwtVerifier.create({
    issuer: config.issuer,
    jwksUri: config.jwksUri,
    audience: null, // Cognito access tokens carry client_id instead of aud; checked below.
    customJwtCheck: ({ header, payload }) => {
      validateCognitoJwtFields(payload, { tokenUse: 'access', clientId: config.clientId });
      if (typeof payload.sub !== 'string' || payload.sub === '') throw new Error('Token has no subject');
      // What Cognito always issues, held here too so that no token of another signer is read more loosely (red team,
      // round 20: no `exp` never expired, a 2 KB `sub` passed DynamoDB's key size and answered 500, and a `crit`
      // extension we do not understand must be refused, RFC 7515 4.1.11).
      if (payload.sub.length > MAX_ACCOUNT_ID_LENGTH) throw new Error('Token subject is too long');
      if (typeof payload.exp !== 'number' || typeof payload.iat !== 'number')
        throw new Error('Token has no expiry');
      if (payload.exp - payload.iat > MAX_TOKEN_LIFETIME_SECONDS) throw new Error('Token lives too long');
      // Else a day's lifetime counts from any date: issued a year ahead, a token was good for a year (red team, round 31).
      if (payload.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) throw new Error('Token issued in the future');
      if (header.crit !== undefined) throw new Error('Token names extensions we do not understand');
    },
  });
  if (jwks) verifier.cacheJwks(jwks);

  return {
    async accountIdOf(token) {
      if (!token)
        throw new UnauthorizedError('Missing session token: send Authorization: Bearer <session token>');
      try {
        const payload = await verifier.verify(token);
        return String(payload.sub);
      } catch (error) {
        if (error instanceof JwtExpiredError) throw new UnauthorizedError('Session token has expired');
        // Only the local identity provider hands its JWKS in; its key lives under DATA_DIR.
        if (jwks && signedByUnknownKey(token, jwks)) {
          throw new UnauthorizedError(
            'Session token signed by another key: mint it with npm run token and the same DATA_DIR as this server',
          );
        }
        throw new UnauthorizedError('Invalid session token');
      }
    },
  };
}

/** Whether the token's header names a key that is not in the JWKS (false for a token that cannot be read). */
function signedByUnknownKey(token: string, jwks: Jwks): boolean {
  try {
    const { kid } = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8'));
    return typeof kid === 'string' && !jwks.keys.some((key) => key.kid === kid);
  } catch {
    return false;
  }
}
