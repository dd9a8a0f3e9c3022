import { sign } from 'node:crypto';
import { type ephemeralIdentityProvider, newSigningKey } from '../../local/ephemeralIdp';
import { type SigningKey, signAccessToken } from '../../local/idp';

/** A way to fail a session token: what it is, how to make one for an account, and the 401 message it earns. */
export type HostileToken = [string, (accountId: string) => string | undefined, RegExp];

/**
 * Every session token a route that takes one must refuse with 401: none, garbage, expired, signed by another key (also
 * under our key id), from another issuer or app client, an id token, no subject, an API key in its place; and, signed
 * by our key, what Cognito never issues (red team, round 20): no expiry, a lifetime of years, a subject past what a
 * table key holds, a critical header extension; and one issued far ahead, for an hour then (round 31).
 */
export function hostileSessionTokens(idp: ReturnType<typeof ephemeralIdentityProvider>): HostileToken[] {
  const other = newSigningKey();
  return [
    ['no token', () => undefined, /Missing session token/],
    ['a garbage token', () => 'not-a-jwt', /Invalid session token/],
    ['an expired token', (a) => idp.token(a, { exp: Math.floor(Date.now() / 1000) - 60, iat: 1 }), /expired/],
    ['a token signed by another key', (a) => signAccessToken(other, { sub: a }), /signed by another key/],
    [
      'a token signed by another key under our key id',
      (a) => signAccessToken({ ...other, kid: idp.key.kid }, { sub: a }),
      /Invalid/,
    ],
    [
      'a token from another issuer',
      (a) => idp.token(a, { iss: 'https://evil.example' }),
      /Invalid session token/,
    ],
    [
      'an id token instead of an access token',
      (a) => idp.token(a, { token_use: 'id' }),
      /Invalid session token/,
    ],
    [
      'a token for another app client',
      (a) => idp.token(a, { client_id: 'someone-else' }),
      /Invalid session token/,
    ],
    ['a token without a subject', () => idp.token('', {}), /Invalid session token/],
    ['an API key', () => `sk_live_${'a'.repeat(40)}`, /Invalid session token/],
    ['a token without an expiry', (a) => idp.token(a, { exp: undefined }), /Invalid session token/],
    [
      'a token that lives ten years',
      (a) => idp.token(a, { exp: Math.floor(Date.now() / 1000) + 10 * 365 * 86_400 }),
      /Invalid session token/,
    ],
    [
      'a token issued a year from now, for an hour',
      (a) => {
        const iat = Math.floor(Date.now() / 1000) + 365 * 86_400;
        return idp.token(a, { iat, exp: iat + 3_600 });
      },
      /Invalid session token/,
    ],
    [
      'a token whose subject is 2,100 characters',
      () => idp.token('x'.repeat(2_100), {}),
      /Invalid session token/,
    ],
    [
      'a token naming a critical extension',
      (a) => withCriticalExtension(idp.key, a),
      /Invalid session token/,
    ],
  ];
}

/** Our own token for `accountId`, its header naming an extension (`crit`) that a verifier must understand or refuse. */
function withCriticalExtension(key: SigningKey, accountId: string): string {
  const [, payload] = signAccessToken(key, { sub: accountId }).split('.');
  const header = {
    alg: 'RS256',
    typ: 'JWT',
    kid: key.kid,
    crit: ['urn:example:bound'],
    'urn:example:bound': 1,
  };
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${payload}`;
  return `${input}.${sign('RSA-SHA256', Buffer.from(input), key.privateKey).toString('base64url')}`;
}
