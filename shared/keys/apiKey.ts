import { createHash, randomBytes } from 'node:crypto';

/** Key value format from the spec: the literal prefix and 40 lowercase hex characters (160 random bits). */
const API_KEY_PREFIX = 'sk_live_';
const API_KEY_PATTERN = /^sk_live_[0-9a-f]{40}$/;

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(20).toString('hex');
}

export function isWellFormedApiKey(value: string): boolean {
  return API_KEY_PATTERN.test(value);
}

/** What we store instead of the key. A plain SHA-256 suffices: the input has 160 bits of entropy, so no salt or KDF. */
export function hashApiKey(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

export function lastFour(value: string): string {
  return value.slice(-4);
}

/** Masked form for lists: `sk_live_...9f3a`. */
export function maskApiKey(last4: string): string {
  return `${API_KEY_PREFIX}...${last4}`;
}

/**
 * Key ids sort by creation time (base-36 milliseconds, fixed width) so a descending query lists newest first;
 * the random tail keeps ids unique and unguessable.
 */
/** Every key id begins so; it is also the encryption context of the key's sealed signing secret. */
export const KEY_ID_PREFIX = 'key_';

export function newKeyId(now: number): string {
  return `${KEY_ID_PREFIX}${now.toString(36).padStart(9, '0')}${randomBytes(6).toString('hex')}`;
}

export const KEY_ID_PATTERN = /^key_[0-9a-z]{9}[0-9a-f]{12}$/;
