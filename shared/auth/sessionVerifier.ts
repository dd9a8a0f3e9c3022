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
    customJwtCheck: ({ payload }) => {
      validateCognitoJwtFields(payload, { tokenUse: 'access', clientId: config.clientId });
      if (typeof payload.sub !== 'string' || payload.sub === '') throw new Error('Token has no subject');
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
        throw new UnauthorizedError('Invalid session token');
      }
    },
  };
}
