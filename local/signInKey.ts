import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The header `POST /local/session` reads the sign-in key from. */
export const SIGN_IN_KEY_HEADER = 'x-sign-in-key';

/**
 * The local dashboard's sign-in key: random, made at each start, and shown only to whoever started `npm start` (in the
 * sign-in link it prints). Without it, any process of any user of the machine that reaches the local port could mint
 * a session token for any account (red team): the route's Host and Origin checks keep out browsers only. A new one at
 * each start, kept by the page for its tab only: the port and its origin are anyone's while `npm start` is down, and a
 * page served there reads what the origin's storage holds (red team), which is then worth nothing.
 */
export function newSignInKey(): string {
  return randomBytes(32).toString('base64url');
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
