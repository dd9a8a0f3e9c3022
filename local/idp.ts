import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomUUID,
  sign,
} from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Jwks } from 'aws-jwt-verify/jwk';
import { createWhole, readWhole } from '../shared/store/wholeFile';
import { SESSION_TOKEN_LIFETIME_SECONDS } from '../shared/timing';

/**
 * The local identity provider: an RSA key pair kept under DATA_DIR, its JWKS, and tokens shaped like Cognito access
 * tokens. The handlers verify them with the same verifier the deployed stack uses against Cognito.
 */
export const LOCAL_ISSUER = 'urn:screenshot-service:local-idp';
export const LOCAL_CLIENT_ID = 'local-client';

export interface LocalIdp {
  issuer: string;
  clientId: string;
  jwks: Jwks;
  /** A signed access token for `accountId`, valid for an hour. */
  mintToken(accountId: string): string;
}

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
}

/** Loads the key pair from `<dataDir>/idp/`, creating it (mode 0600) on first use. */
export async function loadLocalIdp(dataDir: string): Promise<LocalIdp> {
  const dir = join(dataDir, 'idp');
  const file = join(dir, 'signing-key.json');
  let stored = await readFile(file).then(storedKey, () => undefined);
  if (!stored) {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const made = { kid: randomUUID(), pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // Written whole or not at all; another process that created it first (or a file cut short) is read.
    stored = (await createWhole(file, JSON.stringify(made)))
      ? made
      : storedKey(await readWhole(file, (content) => storedKey(content) !== undefined));
  }
  if (!stored) {
    throw new Error(
      `${file} is not a signing key written whole: delete it and start again (sessions signed in end)`,
    );
  }
  const key: SigningKey = { kid: stored.kid, privateKey: createPrivateKey(stored.pem) };
  return {
    issuer: LOCAL_ISSUER,
    clientId: LOCAL_CLIENT_ID,
    jwks: jwksOf(key),
    mintToken: (accountId) => signAccessToken(key, { sub: accountId }),
  };
}

export function jwksOf(key: SigningKey): Jwks {
  const jwk = createPublicKey(key.privateKey).export({ format: 'jwk' });
  return {
    keys: [{ kty: 'RSA', n: String(jwk.n), e: String(jwk.e), kid: key.kid, alg: 'RS256', use: 'sig' }],
  };
}

/**
 * Signs a Cognito-shaped access token. `claims` overrides any default, which is how tests make expired tokens,
 * tokens of another issuer or id tokens.
 */
export function signAccessToken(key: SigningKey, claims: Record<string, unknown>): string {
  const now = Math.floor(Date.now() / 1000);
  const payload = {
    iss: LOCAL_ISSUER,
    client_id: LOCAL_CLIENT_ID,
    token_use: 'access',
    scope: 'aws.cognito.signin.user.admin',
    auth_time: now,
    iat: now,
    exp: now + SESSION_TOKEN_LIFETIME_SECONDS,
    jti: randomUUID(),
    username: claims.sub,
    ...claims,
  };
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signingInput = `${encode({ alg: 'RS256', typ: 'JWT', kid: key.kid })}.${encode(payload)}`;
  return `${signingInput}.${sign('RSA-SHA256', Buffer.from(signingInput), key.privateKey).toString('base64url')}`;
}

/** The key a signing-key file holds, or undefined for one that is not one (empty, cut short). */
function storedKey(content: Buffer): { kid: string; pem: string } | undefined {
  try {
    const parsed = JSON.parse(content.toString('utf8')) as { kid?: unknown; pem?: unknown };
    return typeof parsed.kid === 'string' && typeof parsed.pem === 'string'
      ? { kid: parsed.kid, pem: parsed.pem }
      : undefined;
  } catch {
    return undefined;
  }
}
