// Signing in. The session token lives in sessionStorage only (this tab, until it closes or signs out), never in a
// URL or a cookie. config.json beside the page says how to get one:
//   { "mode": "local" }  the local server mints one for any account id (POST /local/session);
//   { "mode": "cognito", "cognito": { "domain", "clientId", "redirectUri", "scope" } }  the Cognito hosted sign-in,
//   OAuth 2.0 authorization code with PKCE (a public client: no secret in the page).
import { ApiError, describeError } from './api.js';

const SESSION_KEY = 'dashboard.session';
/** Local server only: this start's sign-in key, from the link `npm start` printed (#sign-in=<key>), for this tab only. */
const SIGN_IN_KEY = 'dashboard.localSignInKey';
const PENDING_KEY = 'dashboard.pendingSignIn';
/** Treat a token as gone a little before it expires, so a request never races its expiry. */
const EXPIRY_MARGIN_MS = 30_000;

export async function loadConfig() {
  const response = await fetch('config.json', { cache: 'no-store' });
  if (!response.ok) throw new Error(`The dashboard's config.json could not be loaded (${response.status}).`);
  return response.json();
}

/** @returns {{ token: string, accountName: string, expiresAt: number } | null} */
export function currentSession() {
  try {
    const session = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null');
    if (session && session.expiresAt - EXPIRY_MARGIN_MS > Date.now()) return session;
  } catch {
    // Unreadable: treat as signed out.
  }
  sessionStorage.removeItem(SESSION_KEY);
  return null;
}

/** Keeps the token with what the page shows about it. The API verifies it; the page only reads its claims. */
function keep(token) {
  const claims = JSON.parse(base64UrlDecode(token.split('.')[1] ?? ''));
  const session = {
    token,
    accountName: String(claims.username ?? claims.sub),
    expiresAt: Number(claims.exp) * 1000,
  };
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  return session;
}

/**
 * What a session-token call throws when its session is gone or was replaced before the answer came: the answer
 * belongs to an account the page no longer shows, so callers drop it without a word (the sign-in form says why).
 */
export class SessionEnded extends Error {
  constructor() {
    super('Signed out');
  }
}

export function forgetSession() {
  sessionStorage.removeItem(SESSION_KEY);
}

/**
 * Local server only: keeps the sign-in key of the link the page was opened with, in this tab's session storage (the
 * key changes at each start of the server), and takes it out of the address bar and the history.
 */
export function adoptSignInKey() {
  const key = new URLSearchParams(location.hash.slice(1)).get('sign-in');
  if (!key) return;
  sessionStorage.setItem(SIGN_IN_KEY, key);
  history.replaceState(null, '', location.pathname + location.search);
}

/** Local server only: whether this tab holds a sign-in key (from the link npm start printed). */
export function hasSignInKey() {
  return sessionStorage.getItem(SIGN_IN_KEY) !== null;
}

/** What a tab without the key is told. */
export const NO_SIGN_IN_KEY =
  'Open the sign-in link npm start printed last (http://127.0.0.1:<port>/#sign-in=…): it lets this tab sign in.';

/** Local server only. @param {string} accountId */
export async function signInLocally(accountId) {
  const response = await fetch('/local/session', {
    method: 'POST',
    cache: 'no-store',
    headers: {
      'Content-Type': 'application/json',
      'X-Sign-In-Key': sessionStorage.getItem(SIGN_IN_KEY) ?? '',
    },
    body: JSON.stringify({ accountId }),
  });
  const body = await response.json().catch(() => null);
  if (!response.ok || typeof body?.token !== 'string')
    throw new ApiError(response.status, describeError(response.status, body));
  return keep(body.token);
}

/** Sends the browser to the hosted sign-in page; it comes back to redirectUri with ?code=&state=. */
export async function startHostedSignIn(cognito) {
  const verifier = randomBase64Url(32);
  const state = randomBase64Url(16);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state }));
  const challenge = base64UrlEncode(
    await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)),
  );
  const url = new URL('/oauth2/authorize', cognito.domain);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: cognito.clientId,
    redirect_uri: cognito.redirectUri,
    scope: cognito.scope,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url);
}

/**
 * On the way back from the hosted sign-in: checks state, swaps the code (with the PKCE verifier) for tokens and
 * keeps only the access token. Returns null when this page load is not this tab's sign-in callback: a callback whose
 * state this tab did not start (a link anyone can send, with an error text of their choosing) is not acted on, and
 * the page goes on with the session it has.
 */
export async function finishHostedSignIn(cognito) {
  const params = new URLSearchParams(location.search);
  if (!params.has('code') && !params.has('error')) return null;
  // The one-time code leaves the address bar and history before anything else happens.
  history.replaceState(null, '', location.pathname);
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? 'null');
  if (!pending || params.get('state') !== pending.state) return null;
  sessionStorage.removeItem(PENDING_KEY);
  if (params.has('error')) throw new Error(signInErrorMessage(params.get('error') ?? ''));
  const response = await fetch(new URL('/oauth2/token', cognito.domain), {
    method: 'POST',
    cache: 'no-store',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: cognito.clientId,
      code: params.get('code') ?? '',
      redirect_uri: cognito.redirectUri,
      code_verifier: pending.verifier,
    }),
  });
  const body = await response.json().catch(() => null);
  if (!response.ok || typeof body?.access_token !== 'string') {
    throw new Error(
      `Sign-in failed: ${body?.error_description ?? body?.error ?? `status ${response.status}`}`,
    );
  }
  return keep(body.access_token);
}

/** The dashboard's own words for an OAuth error code (RFC 6749 4.1.2.1), never the provider's free text. */
function signInErrorMessage(code) {
  if (code === 'access_denied') return 'Sign-in was cancelled or refused. Please sign in again.';
  const shown = /^[a-z_]{1,40}$/.test(code) ? ` (${code})` : '';
  return `Sign-in did not complete${shown}. Please sign in again.`;
}

/** Ends the hosted sign-in session too, so the next sign-in asks for credentials again. */
export function hostedSignOut(cognito) {
  const url = new URL('/logout', cognito.domain);
  url.search = new URLSearchParams({
    client_id: cognito.clientId,
    logout_uri: cognito.redirectUri,
  }).toString();
  location.assign(url);
}

function randomBase64Url(bytes) {
  return base64UrlEncode(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** @param {ArrayBuffer | Uint8Array} data */
function base64UrlEncode(data) {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

function base64UrlDecode(text) {
  const padded = text
    .replace(/-/g, '+')
    .replace(/_/g, '/')
    .padEnd(Math.ceil(text.length / 4) * 4, '=');
  return new TextDecoder().decode(Uint8Array.from(atob(padded), (c) => c.charCodeAt(0)));
}
