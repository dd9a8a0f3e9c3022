import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signed links (docs/api.md, "Signed links"): `GET /api/screenshot?<options>&keyId=<key id>&signature=<hex>`, where
 * the signature is the HMAC-SHA256, keyed with the key's signing secret, of the canonical query.
 */
export const KEY_ID_PARAM = 'keyId';
export const SIGNATURE_PARAM = 'signature';

/** `ss_live_` and 64 hex characters (256 random bits); the HMAC key is this whole string, as UTF-8. */
const SIGNING_SECRET_PREFIX = 'ss_live_';

export function generateSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(32).toString('hex');
}

/** RFC 3986 percent-encoding of UTF-8: only A–Z a–z 0–9 - . _ ~ stay as they are; hex digits upper case. */
export function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * The text a signature covers: every parameter except `signature`, each as `encode(name)=encode(value)`, sorted by
 * the encoded name (plain byte order: all of it is ASCII by then), joined with `&`.
 */
export function canonicalQuery(query: Readonly<Record<string, string>>): string {
  return Object.entries(query)
    .filter(([name]) => name !== SIGNATURE_PARAM)
    .map(([name, value]) => [rfc3986(name), rfc3986(value)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

/** The signature of a canonical query: lower-case hex HMAC-SHA256. */
export function signQuery(secret: string, canonical: string): string {
  return createHmac('sha256', secret).update(canonical, 'utf8').digest('hex');
}

const SIGNATURE_PATTERN = /^[0-9a-fA-F]{64}$/;

/** Compares in constant time, so the answer's timing tells nothing about how much of a guess was right. */
export function signatureMatches(secret: string, canonical: string, signature: string): boolean {
  if (!SIGNATURE_PATTERN.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(canonical, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}
