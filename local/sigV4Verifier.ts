import { createHash, timingSafeEqual } from 'node:crypto';
import { Hash } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';

/** The credentials of a local AWS API (the S3 and DynamoDB ones). */
export interface LocalCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * The credentials of a local AWS API from its secret (random, per data dir): the access key id is derived from the
 * secret too, so a request that does not name it can be refused before its body is read (claimsCredential), and no
 * process of the machine without the secret makes a gate hold any (red team: unsigned, unfinished 16 MiB bodies).
 */
export function localCredentials(name: string, secret: Buffer): LocalCredentials {
  const id = createHash('sha256').update(`${name} access key id`).update(secret).digest('hex').slice(0, 20);
  return { accessKeyId: `${name}${id}`, secretAccessKey: secret.toString('hex') };
}

/**
 * Whether a request names `accessKeyId` as its credential, in its Authorization header or (a pre-signed link) its
 * query: cheap, and before its body is read. Only the signature proves it.
 */
export function claimsCredential(
  headers: ReceivedRequest['headers'],
  target: string,
  accessKeyId: string,
): boolean {
  if (header(headers, 'authorization')?.includes(`Credential=${accessKeyId}/`)) return true;
  const credential = splitTarget(target).query['X-Amz-Credential'];
  return typeof credential === 'string' && credential.startsWith(`${accessKeyId}/`);
}

/** A request as the SDK's signer takes it. */
type HttpRequest = Parameters<SignatureV4['presign']>[0];
type QueryParameterBag = HttpRequest['query'] & {};

/**
 * Checks AWS Signature Version 4 on a request a local AWS API received, header-signed (the SDK's calls) or
 * pre-signed (S3 links), by signing it again with the AWS SDK's own signer and the local credentials, and comparing.
 * s3rver lets anonymous requests through and knows only its built-in credentials, and dynalite checks no signature,
 * so this is what stands between a captured page (or anyone on the machine) and the stored images and the table.
 */
export interface ReceivedRequest {
  method: string;
  /** The request target exactly as received: path and query, still percent-encoded. */
  target: string;
  /** Header names lower-case, as Node gives them. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /**
   * Undefined: not read yet. A header-signed request is then checked on what it declares of its body
   * (`x-amz-content-sha256`, which it must carry), and its body against that once read (bodyMatchesHash).
   */
  body: Buffer | undefined;
}

export type SignatureVerdict = { valid: true } | { valid: false; reason: string };

const ALGORITHM = 'AWS4-HMAC-SHA256';
/** How far a header-signed request's time may be from ours, as S3 allows. */
const MAX_CLOCK_SKEW_MS = 15 * 60_000;
/** The longest a pre-signed link may live, as S3 allows. */
const MAX_EXPIRES_S = 7 * 24 * 3600;
/** The query parameters a pre-signed link carries its signature in (the rest of its query is signed). */
export const PRESIGN_PARAMS = [
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
  'X-Amz-Security-Token',
] as const;
const CONTENT_SHA256 = 'x-amz-content-sha256';
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

export function sigV4Verifier(credentials: LocalCredentials, region: string, service = 's3') {
  const signer = new SignatureV4({
    credentials,
    region,
    service,
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: false,
  });

  return async function verify(request: ReceivedRequest, now: number): Promise<SignatureVerdict> {
    const { path, query } = splitTarget(request.target);
    const authorization = header(request.headers, 'authorization');
    if (authorization !== undefined) return verifyHeaderSigned(request, path, query, authorization, now);
    if (query['X-Amz-Signature'] !== undefined) return verifyPresigned(request, path, query, now);
    return refused('the request is not signed');
  };

  async function verifyHeaderSigned(
    request: ReceivedRequest,
    path: string,
    query: QueryParameterBag,
    authorization: string,
    now: number,
  ): Promise<SignatureVerdict> {
    const parts =
      /^AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})$/.exec(
        authorization,
      );
    if (!parts) return refused('the Authorization header is not SigV4');
    const [, credential = '', signedHeaderList = '', signature = ''] = parts;
    const signingDate = parseAmzDate(header(request.headers, 'x-amz-date'));
    if (!signingDate) return refused('x-amz-date is missing or malformed');
    if (Math.abs(now - signingDate.getTime()) > MAX_CLOCK_SKEW_MS)
      return refused('the request time is more than 15 minutes from ours');
    const scope = checkScope(credential, signingDate);
    if (scope) return refused(scope);
    const payloadHash = header(request.headers, CONTENT_SHA256);
    if (request.body === undefined) {
      if (payloadHash === undefined) return refused('x-amz-content-sha256 is missing');
    } else if (!bodyMatchesHash(request.headers, request.body)) {
      return refused('the body does not match x-amz-content-sha256');
    }
    const signed = await signer.sign(
      toSign(
        request,
        path,
        query,
        signedHeaderList.split(';'),
        payloadHash === undefined ? request.body : undefined,
      ),
      { signingDate },
    );
    const expected = /Signature=([0-9a-f]{64})$/.exec(String(signed.headers.authorization))?.[1];
    return sameHex(expected, signature) ? { valid: true } : refused('the signature does not match');
  }

  async function verifyPresigned(
    request: ReceivedRequest,
    path: string,
    query: QueryParameterBag,
    now: number,
  ): Promise<SignatureVerdict> {
    if (query['X-Amz-Algorithm'] !== ALGORITHM) return refused('X-Amz-Algorithm is not AWS4-HMAC-SHA256');
    const signingDate = parseAmzDate(single(query['X-Amz-Date']));
    const expires = Number(single(query['X-Amz-Expires']));
    if (!signingDate) return refused('X-Amz-Date is missing or malformed');
    if (!Number.isInteger(expires) || expires < 1 || expires > MAX_EXPIRES_S) {
      return refused('X-Amz-Expires is missing or out of range');
    }
    if (signingDate.getTime() - now > MAX_CLOCK_SKEW_MS) return refused('the link is dated in the future');
    if (now > signingDate.getTime() + expires * 1000) return refused('the link has expired');
    const scope = checkScope(single(query['X-Amz-Credential']) ?? '', signingDate);
    if (scope) return refused(scope);
    const signature = single(query['X-Amz-Signature']);
    const { 'X-Amz-Signature': _, ...rest } = query;
    // The presigner signs S3 links with an unsigned payload, written into the query under its header's name: given
    // back as that header (same spelling), presign hoists it to the query again.
    const hashName = Object.keys(rest).find((name) => name.toLowerCase() === CONTENT_SHA256);
    const payloadHash = hashName === undefined ? UNSIGNED_PAYLOAD : single(rest[hashName]);
    if (hashName !== undefined) delete rest[hashName];
    const unsigned = toSign(request, path, rest, (single(query['X-Amz-SignedHeaders']) ?? '').split(';'));
    unsigned.headers[hashName ?? CONTENT_SHA256] = payloadHash ?? UNSIGNED_PAYLOAD;
    const signed = await signer.presign(unsigned, { signingDate, expiresIn: expires });
    return sameHex(single(signed.query?.['X-Amz-Signature']), signature)
      ? { valid: true }
      : refused('the signature does not match');
  }

  /** The credential scope must be ours: our access key, the signing day, our region and service. */
  function checkScope(credential: string, signingDate: Date): string | undefined {
    const day = signingDate.toISOString().slice(0, 10).replaceAll('-', '');
    return credential === `${credentials.accessKeyId}/${day}/${region}/${service}/aws4_request`
      ? undefined
      : 'the credential is not ours';
  }
}

/** The request as the signer takes it, carrying only the headers the client said it signed. */
function toSign(
  request: ReceivedRequest,
  path: string,
  query: QueryParameterBag,
  signedHeaders: string[],
  body?: Buffer,
): HttpRequest {
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = header(request.headers, name);
    if (value !== undefined) headers[name] = value;
  }
  return {
    method: request.method,
    protocol: 'http:',
    hostname: 'localhost',
    path,
    query,
    headers,
    ...(body && body.length > 0 ? { body } : {}),
  };
}

/** Path (still encoded, as S3 signs it) and the decoded query; '+' is a plus, as the SDK encodes spaces as %20. */
function splitTarget(target: string): { path: string; query: QueryParameterBag } {
  const mark = target.indexOf('?');
  const path = mark === -1 ? target : target.slice(0, mark);
  const query: Record<string, string | string[]> = {};
  if (mark !== -1) {
    for (const pair of target.slice(mark + 1).split('&')) {
      if (pair === '') continue;
      const equals = pair.indexOf('=');
      const name = safeDecode(equals === -1 ? pair : pair.slice(0, equals));
      const value = equals === -1 ? '' : safeDecode(pair.slice(equals + 1));
      const before = query[name];
      query[name] = before === undefined ? value : [...(Array.isArray(before) ? before : [before]), value];
    }
  }
  return { path, query };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function header(headers: ReceivedRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function single(value: string | string[] | null | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** `20261125T151000Z` → that instant; anything else undefined. */
function parseAmzDate(text: string | undefined): Date | undefined {
  const parts = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text ?? '');
  if (!parts) return undefined;
  const [, y, mo, d, h, mi, s] = parts.map(Number);
  const date = new Date(Date.UTC(y ?? 0, (mo ?? 1) - 1, d, h, mi, s));
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** Whether `body` is the one a header-signed request declared (`x-amz-content-sha256`), or it declared none. */
export function bodyMatchesHash(headers: ReceivedRequest['headers'], body: Buffer): boolean {
  const payloadHash = header(headers, CONTENT_SHA256);
  return payloadHash === undefined || payloadHash === UNSIGNED_PAYLOAD || payloadHash === sha256Hex(body);
}

function sha256Hex(body: Buffer): string {
  return createHash('sha256').update(body).digest('hex');
}

function sameHex(expected: string | undefined, actual: string | undefined): boolean {
  if (!expected || !actual || expected.length !== actual.length) return false;
  return timingSafeEqual(Buffer.from(expected), Buffer.from(actual));
}

function refused(reason: string): SignatureVerdict {
  return { valid: false, reason };
}
