import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname } from 'node:path';
import { z } from 'zod';
import { MAX_ACCOUNT_ID_LENGTH } from '../shared/auth/sessionVerifier';
import type { ValidationDetail } from '../shared/errors';
import { SESSION_TOKEN_LIFETIME_SECONDS } from '../shared/timing';
import { detailsFromZod } from '../shared/validation';
import { DASHBOARD_HEADERS, dashboardContentSecurityPolicy } from '../web/securityHeaders';
import { vendorFilePath } from '../web/vendorFiles';
import type { ExtraRoute } from './httpAdapter';
import type { LocalIdp } from './idp';
import { isSignInKey, SIGN_IN_KEY_HEADER } from './signInKey';

/**
 * The deployable dashboard: every file there goes to the S3 bucket as is (infra/dashboardSite.ts), beside the
 * vendor files of web/vendorFiles.ts.
 */
export const DASHBOARD_DIR = new URL('../web/public/', import.meta.url);

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};
// One flat directory of plain names: nothing a request path can turn into another directory.
const FILE_NAME = /^[a-z0-9-]+\.(?:html|js|css|svg)$/;
const MAX_SESSION_BODY_BYTES = 4096;

/**
 * What config.json tells the page: how to sign in, and, deployed, where signed links point (the signed-link CDN;
 * without it, the page's own origin). Deployed, infra/dashboardSite.ts writes the Cognito variant.
 */
export type DashboardConfig =
  | { mode: 'local' }
  | {
      mode: 'cognito';
      cognito: { domain: string; clientId: string; redirectUri: string; scope: string };
      signedLinkBaseUrl?: string;
    };

const LOCAL_DASHBOARD_CONFIG: DashboardConfig = { mode: 'local' };

const sessionRequest = z.strictObject({
  accountId: z
    .string()
    .trim()
    .min(1, { error: 'Account id must not be empty', abort: true })
    .max(MAX_ACCOUNT_ID_LENGTH, `Account id must be at most ${MAX_ACCOUNT_ID_LENGTH} characters`)
    .regex(/^[\w.@+-]+$/, 'Account id may contain letters, digits and . _ @ + - only'),
});

/** The answer to a sign-in without the data dir's key. */
const SIGN_IN_KEY_MISSING =
  'Open the sign-in link npm start printed last: it holds the key of this start (X-Sign-In-Key)';

export interface DashboardRoutesOptions {
  idp: LocalIdp;
  /** The local server's own base URL (http://127.0.0.1:<port>). */
  baseUrl: string;
  /** This start's sign-in key (signInKey.ts), which `POST /local/session` requires. */
  signInKey: string;
  /** Default: local sign-in. Tests serve the Cognito variant to run the hosted sign-in against a stand-in. */
  config?: DashboardConfig;
  /**
   * The local S3 API's address: a signed link's large cached image is a redirect to it (docs/api.md 15.3), and the
   * page shows the image of the links it builds.
   */
  imageFilesUrl?: string;
}

/**
 * The dashboard on the local server: its static files at `/` with the deployed security headers, `config.json`
 * saying "local", and `POST /local/session`, which signs in as any account id through the local identity provider
 * (what `npm run token` does, for the page) to whoever holds the sign-in key. Only this process serves it; the
 * deployed stack has no such route.
 */
export function dashboardRoutes(options: DashboardRoutesOptions): ExtraRoute[] {
  const config = options.config ?? LOCAL_DASHBOARD_CONFIG;
  // As deployed: the page may fetch from the sign-in domain (its token endpoint) and nowhere else.
  const csp = dashboardContentSecurityPolicy(
    config.mode === 'cognito' ? [new URL(config.cognito.domain).origin] : [],
    [
      ...(config.mode === 'cognito' && config.signedLinkBaseUrl ? [config.signedLinkBaseUrl] : []),
      ...(options.imageFilesUrl ? [options.imageFilesUrl] : []),
    ].map((url) => new URL(url).origin),
  );
  const { port } = new URL(options.baseUrl);
  const ownHosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  const ownOrigins = new Set([...ownHosts].map((host) => `http://${host}`));

  const staticFiles: ExtraRoute = async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const { pathname } = new URL(req.url ?? '/', 'http://localhost');
    if (pathname === '/config.json') {
      send(res, csp, 200, { 'Content-Type': 'application/json; charset=utf-8' }, JSON.stringify(config));
      return true;
    }
    const name = pathname === '/' ? 'index.html' : pathname.slice(1);
    if (!FILE_NAME.test(name)) return false;
    let body: Buffer;
    try {
      body = await readFile(vendorFilePath(name) ?? new URL(name, DASHBOARD_DIR));
    } catch {
      return false;
    }
    const contentType = CONTENT_TYPES[extname(name)] ?? 'application/octet-stream';
    send(
      res,
      csp,
      200,
      { 'Content-Type': contentType },
      req.method === 'HEAD' ? Buffer.alloc(0) : body,
      body.length,
    );
    return true;
  };

  const session: ExtraRoute = async (req, res) => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/local/session') return false;
    // Every answer here is JSON that no cache keeps, as the API's (red team, round 23: the refusals said no-cache).
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      send(res, csp, status, { 'Cache-Control': 'no-store', ...headers }, JSON.stringify(body));
    if (req.method !== 'POST') {
      answer(405, { message: 'Method not allowed' }, { Allow: 'POST' });
      return true;
    }
    // Another site in the user's browser must not sign in through here: refuse foreign Host headers (DNS
    // rebinding) and foreign origins, and require JSON, which a cross-site page cannot send without a preflight
    // that this server never approves.
    const origin = req.headers.origin;
    if (!ownHosts.has(req.headers.host ?? '') || (origin !== undefined && !ownOrigins.has(origin))) {
      answer(403, { message: 'Sign in from the dashboard served by this server' });
      return true;
    }
    const offered = req.headers[SIGN_IN_KEY_HEADER];
    if (!isSignInKey(options.signInKey, typeof offered === 'string' ? offered : undefined)) {
      answer(401, { message: SIGN_IN_KEY_MISSING });
      return true;
    }
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      answer(415, { message: 'Content-Type must be application/json' });
      return true;
    }
    const text = await readSmallBody(req);
    const refused = (details: ValidationDetail[]) =>
      answer(400, { message: 'Invalid request body', details });
    if (text === undefined) {
      refused([
        { code: 'too_big', path: [], message: `Request body is larger than ${MAX_SESSION_BODY_BYTES} bytes` },
      ]);
      return true;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      // Named as the API names it (red team, round 23: an unparsable body was said to be an undefined object).
      refused([{ code: 'invalid_json', path: [], message: 'Request body is not valid JSON' }]);
      return true;
    }
    const parsed = sessionRequest.safeParse(value);
    if (!parsed.success) {
      refused(detailsFromZod(parsed.error));
      return true;
    }
    const token = options.idp.mintToken(parsed.data.accountId);
    answer(200, { token, expiresIn: SESSION_TOKEN_LIFETIME_SECONDS });
    return true;
  };

  return config.mode === 'local' ? [staticFiles, session] : [staticFiles];
}

function send(
  res: ServerResponse,
  csp: string,
  status: number,
  headers: Record<string, string>,
  body: string | Buffer,
  length = Buffer.byteLength(body),
): void {
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-cache',
    'Content-Security-Policy': csp,
    ...DASHBOARD_HEADERS,
    ...headers,
    'Content-Length': String(length),
  });
  res.end(body);
}

/** The body as text, or undefined when it is larger than a sign-in request can be. */
async function readSmallBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_SESSION_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
