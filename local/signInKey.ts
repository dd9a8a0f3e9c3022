import { createHash, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { loadOrCreateKey } from '../shared/store/fileSecretCipher';

/** The header `POST /local/session` reads the data dir's sign-in key from. */
export const SIGN_IN_KEY_HEADER = 'x-sign-in-key';

/**
 * The local dashboard's sign-in key: random, kept owner-only under DATA_DIR, and shown only to whoever started
 * `npm start` (in the sign-in link it prints). Without it, any process of any user of the machine that reaches the
 * local port could mint a session token for any account (red team): the routes' Host and Origin checks keep out
 * browsers only.
 */
export async function loadSignInKey(dataDir: string): Promise<string> {
  return (await loadOrCreateKey(join(dataDir, 'secrets', 'sign-in.key'))).toString('base64url');
}

/** The dashboard's address with the key in its fragment, which no request carries; the page keeps it. */
export function signInLink(baseUrl: string, key: string): string {
  return `${baseUrl}/#sign-in=${key}`;
}

/** Whether `offered` is the key, in time that does not depend on how much of it matched. */
export function isSignInKey(key: string, offered: string | undefined): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return offered !== undefined && timingSafeEqual(digest(key), digest(offered));
}
