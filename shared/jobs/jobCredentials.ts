import { randomBytes } from 'node:crypto';
import { AppError } from '../errors';
import { AES_GCM_KEY_BYTES, AesGcmSecretCipher } from '../signing/aesGcmSecretCipher';
import type { SecretCipher } from '../signing/secretCipher';

/**
 * The request fields that may carry a customer's secrets: a URL's path or query (a session token, a pre-signed or
 * magic link), a script that signs in (`localStorage.setItem('token', …)`), an `Authorization` header, session cookies
 * (red team, round 30: the URL and the script lay in clear for the job's 7 days). A request for an `html` document
 * (which takes no headers or cookies) is kept as sent, its script with it: sealed as JSON and in base64, a document of
 * 256 KiB, or one beside a script of 32 KiB of control characters (6 bytes each as JSON), passes DynamoDB's 400 KB item
 * (review, session 31). A request for a `url` is held to 96 KiB as JSON, so sealed it stays well under.
 */
const CREDENTIAL_FIELDS = ['url', 'js', 'headers', 'cookies'] as const;
/** Where a queued request keeps them instead, sealed. */
const SEALED_FIELD = 'sealedCredentials';
/**
 * The encryption context of a job's data key, per account: the grants name this prefix (infra), and a data key
 * copied onto another account's job does not open there.
 */
export const JOB_CREDENTIALS_CONTEXT_PREFIX = 'job-credentials:';

interface SealedCredentials {
  /** The data key, sealed by the service's cipher (KMS deployed). */
  key: string;
  /** The credential fields as JSON, sealed by the data key with the job's id as context. */
  fields: string;
}

type QueuedRequest = Record<string, unknown>;

/**
 * A job's sealed credentials did not open (sealed for another job, or under a key that no longer opens them): no
 * later run would open them either, so the job ends at once. A cipher out of reach throws its own error instead.
 */
export class CredentialsNotOpenedError extends AppError {
  constructor() {
    super(500, "The request's URL, script, headers and cookies could not be read");
  }
}

/**
 * A queued capture waits in the table for up to its job's lifetime, so what a synchronous capture only holds in
 * memory would lie there in clear: the fields above are sealed in an envelope instead. One data key per
 * intake (one call to the cipher, KMS deployed, however many jobs), sealed under the account; each job's fields
 * under that key with the job's id as context, so sealed fields copied onto another job do not open either. A
 * request without any (an `html` document) is stored as it is, with no call.
 */
export async function sealCredentials<T extends { id: string; accountId: string; request: QueuedRequest }>(
  cipher: SecretCipher,
  jobs: T[],
): Promise<T[]> {
  const [first] = jobs;
  if (!first || !jobs.some((job) => hasCredentials(job.request))) return jobs;
  const dataKey = randomBytes(AES_GCM_KEY_BYTES);
  const key = await cipher.seal(dataKey.toString('base64'), contextOf(first.accountId));
  const sealer = new AesGcmSecretCipher(dataKey);
  return Promise.all(
    jobs.map(async (job) => {
      if (!hasCredentials(job.request)) return job;
      const request: QueuedRequest = { ...job.request };
      const credentials: QueuedRequest = {};
      for (const field of sealedFieldsOf(request)) {
        if (request[field] === undefined) continue;
        credentials[field] = request[field];
        delete request[field];
      }
      const sealed: SealedCredentials = {
        key,
        fields: await sealer.seal(JSON.stringify(credentials), job.id),
      };
      return { ...job, request: { ...request, [SEALED_FIELD]: sealed } };
    }),
  );
}

/** A job's request as it was accepted, its credentials opened; CredentialsNotOpenedError when they do not open. */
export async function openCredentials(
  cipher: SecretCipher,
  job: { id: string; accountId: string; request: QueuedRequest },
): Promise<QueuedRequest> {
  const { [SEALED_FIELD]: sealed, ...request } = job.request;
  if (sealed === undefined) return request;
  const { key, fields } = sealed as SealedCredentials;
  const dataKey = await cipher.open(key, contextOf(job.accountId));
  const opened =
    dataKey === undefined
      ? undefined
      : await new AesGcmSecretCipher(Buffer.from(dataKey, 'base64')).open(fields, job.id);
  if (opened === undefined) throw new CredentialsNotOpenedError();
  return { ...request, ...(JSON.parse(opened) as QueuedRequest) };
}

function sealedFieldsOf(request: QueuedRequest): readonly (typeof CREDENTIAL_FIELDS)[number][] {
  return request.html === undefined ? CREDENTIAL_FIELDS : [];
}

function hasCredentials(request: QueuedRequest): boolean {
  return sealedFieldsOf(request).some((field) => request[field] !== undefined);
}

function contextOf(accountId: string): string {
  return `${JOB_CREDENTIALS_CONTEXT_PREFIX}${accountId}`;
}
