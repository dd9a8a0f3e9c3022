import { createHash } from 'node:crypto';
import type { PageMetadata } from '../capture/renderer';

/** What is kept beside a stored image: enough to answer from it without reading or decoding the bytes. */
export interface StoredImageInfo {
  contentType: string;
  /** Quoted hex MD5 of the bytes, as the capture's answer carried it. */
  etag: string;
  bytes: number;
  width: number;
  height: number;
  /** A full page cut at the height cap. */
  truncated: boolean;
  /** When it was stored, ms since epoch. */
  storedAt: number;
  /** When it stops being served from the cache, ms since epoch (the lifecycle rule removes it later). */
  expiresAt: number;
  /** The page's metadata, kept for a cached capture that asked for it. */
  metadata?: PageMetadata;
}

/**
 * Port for image storage: the S3 bucket deployed, a real S3 API on a local port locally
 * (`shared/store/s3ImageStore.ts`). Keys come from `imageKey`.
 */
export interface ImageStore {
  put(key: string, image: Buffer, info: StoredImageInfo): Promise<void>;
  /** What is stored under the key, without the bytes; undefined when nothing is. */
  head(key: string): Promise<StoredImageInfo | undefined>;
  /**
   * The bytes and what is stored beside them; undefined when nothing is. An object of more than `maxBytes` is not
   * read: its info comes alone.
   */
  get(key: string, maxBytes?: number): Promise<{ image?: Buffer; info: StoredImageInfo } | undefined>;
  /**
   * Only the page metadata stored beside the image at `key` (put with `info.metadata`), in one read; undefined when
   * there is none (never stored, or expired with the image).
   */
  pageMetadata(key: string): Promise<PageMetadata | undefined>;
  /**
   * A pre-signed GET address of the object, signed as at `link.signedAt` and valid for `link.seconds` from then
   * (linkTimes).
   */
  signedUrl(key: string, link: LinkTimes): Promise<string>;
  /**
   * A copy of the object at `from` under `to`, kept from `storedAt` until `expiresAt` (ms), made only while `from`
   * still holds the bytes `etag` names: false, and nothing to link to, when it no longer does (replaced meanwhile).
   * A copy of the same bytes already under `to` that lasts until `expiresAt` is kept as it is.
   */
  copyIfUnchanged(
    from: string,
    to: string,
    etag: string,
    storedAt: number,
    expiresAt: number,
  ): Promise<boolean>;
}

/** When a pre-signed link is signed and until when it works, as its answer states it (`expiresAt`). */
export interface LinkTimes {
  /** ms since epoch, a whole second: a signature carries its date in whole seconds. */
  signedAt: number;
  seconds: number;
  expiresAt: number;
}

/**
 * A link signed now, lasting `seconds`. The answer's `expiresAt` is the signature's own end: S3 counts it from the
 * signing date in whole seconds, so a later clock reading stated a link as valid up to a second after it stopped
 * working (red team, round 27).
 */
export function linkTimes(now: number, seconds: number): LinkTimes {
  const signedAt = Math.floor(now / 1000) * 1000;
  return { signedAt, seconds, expiresAt: signedAt + seconds * 1000 };
}

/** Every object lives under this prefix: the only part of the bucket the screenshot function may touch. */
export const IMAGE_PREFIX = 'images/';

/**
 * Two kinds of object, each under its own prefix so that a lifecycle rule of its own removes it: cache entries live
 * as long as the longest cache TTL allows, images stored only to be linked to (`response: "json"` without the cache)
 * as long as their link.
 */
export const IMAGE_KINDS = {
  cache: `${IMAGE_PREFIX}cache/`,
  linked: `${IMAGE_PREFIX}linked/`,
  /** Async jobs' results, kept as long as their jobs (7 days). */
  job: `${IMAGE_PREFIX}jobs/`,
} as const;

/**
 * Every stored object is tagged with the first of these day counts that outlives it (its `cacheTtl`, or a link's
 * lifetime, plus a day of margin): a lifecycle rule per value removes it then, instead of the longest time a kind
 * allows. Objects stored before the tag existed keep their kind's rule.
 */
export const EXPIRY_TAG = 'expires-after-days';
export const EXPIRY_DAYS = [2, 8, 31] as const;

/** The expiry class of an object stored at `storedAt` and served until `expiresAt` (ms). */
export function expiryDays(storedAt: number, expiresAt: number): (typeof EXPIRY_DAYS)[number] {
  const needed = Math.ceil(Math.max(0, expiresAt - storedAt) / 86_400_000) + 1;
  return EXPIRY_DAYS.find((days) => days >= needed) ?? 31;
}

/**
 * The per-account folder: a hash of the account id, so any id (whatever characters an identity provider allows)
 * makes one safe path segment.
 */
function accountFolder(accountId: string): string {
  return createHash('sha256').update(accountId, 'utf8').digest('hex').slice(0, 32);
}

export const imageKey = {
  /** The cache entry of one request (its key from `cacheKeyOf`, screenshot/cacheKey.ts). */
  cached: (accountId: string, cacheKey: string) =>
    `${IMAGE_KINDS.cache}${accountFolder(accountId)}/${cacheKey}`,
  /** An image stored only to be linked to. */
  linked: (accountId: string, id: string) => `${IMAGE_KINDS.linked}${accountFolder(accountId)}/${id}`,
  /**
   * The result of one run of an async job: two deliveries of its message that run at once each store their own, so
   * the one whose end is written never has its image replaced by the other's.
   */
  job: (accountId: string, jobId: string, run: number) =>
    `${IMAGE_KINDS.job}${accountFolder(accountId)}/${jobId}/${run}`,
};
