import { createHash, randomUUID } from 'node:crypto';
import { imageSize } from 'image-size';
import { pdfPageSize } from '../capture/pdfPages';
import { CAPTURE_CONTENT_TYPES, type PageMetadata } from '../capture/renderer';
import { logger } from '../logger';
import { IMAGE_LINK_LIFETIME_SECONDS } from '../timing';
import { type ImageStore, imageKey, linkTimes, type StoredImageInfo } from './imageStore';

export type CacheStatus = 'HIT' | 'MISS';

/** A stored image and its pre-signed address (`response: "json"`). */
export interface ImageLink {
  url: string;
  /** When the address stops working, ms since epoch. */
  expiresAt: number;
  /** The image's pixel size, a PDF's first page in points; null for text (a content format). */
  width: number | null;
  height: number | null;
  bytes: number;
}

/** What a screenshot request answers with, whichever way it is delivered. */
export interface Screenshot {
  /** The bytes, for `response: "image"`; absent for a link or a 304. */
  image?: Buffer;
  contentType: string;
  /** Quoted hex MD5 of the image bytes. */
  etag: string;
  creditsCharged: number;
  /** A full page cut at the height cap. */
  truncated: boolean;
  /** Whether the cache answered; present when the request asked for the cache. */
  cache?: CacheStatus;
  /** Present for `response: "json"`, and for a hit larger than the request answers inline (`redirected`). */
  link?: ImageLink;
  /** A cached image larger than `inlineHitBytes`: answered by sending the client to `link.url`, not with its bytes. */
  redirected?: true;
  /** The caller's If-None-Match names the cached image: 304, no body. */
  notModified?: true;
  /** Captured with the caller's `headers` or `cookies`: answered `Cache-Control: private`. */
  credentialed?: true;
  /** What the page said about itself, when the request asked for it (`metadata: true`). */
  metadata?: PageMetadata;
  /** For an image in the cache: how many more seconds it answers this request's `cacheTtl` (a shared cache's lifetime). */
  freshForSeconds?: number;
}

/** A fresh capture, before delivery. */
export type CapturedImage = Required<Pick<Screenshot, 'image'>> &
  Omit<Screenshot, 'cache' | 'link' | 'redirected' | 'notModified' | 'credentialed' | 'freshForSeconds'>;

/** How a request wants its answer delivered (screenshot/cacheKey.ts builds it from a screenshot request). */
export interface DeliveryRequest {
  /** The account's cache entry of what the request shows, when it asks for the cache. */
  cacheKey: string | undefined;
  /** How old, in seconds, a cached image may be to answer it. */
  cacheTtl: number;
  response: 'image' | 'json';
  /**
   * The largest cached image answered with its bytes; a larger hit is `redirected` to a link. A signed link's hits
   * are free and anyone holding the link may ask for them (SIGNED_LINK_INLINE_HIT_BYTES); unbounded when absent.
   */
  inlineHitBytes?: number;
}

/**
 * A signed link's hits above this many bytes are answered with a redirect to the stored file. Deployed, Lambda
 * streams an answer's first 6 MB at once and the rest at about 2 MB/s: a free hit of up to 190 MiB held a screenshot
 * function for a minute or more, and locally the front's memory, for as long as its visitor took (red team).
 */
export const SIGNED_LINK_INLINE_HIT_BYTES = 6_000_000;

export interface ImageDeliveryDeps {
  images: ImageStore;
  now: () => number;
}

/**
 * The delivery part of a screenshot request (docs/api.md, "Delivery"): answering from the cache before anything is
 * charged, and storing a fresh capture for the cache or for a link afterwards.
 */
export function imageDelivery(deps: ImageDeliveryDeps) {
  async function linkTo(key: string, info: StoredImageInfo): Promise<ImageLink> {
    const link = linkTimes(deps.now(), IMAGE_LINK_LIFETIME_SECONDS);
    return {
      url: await deps.images.signedUrl(key, link),
      expiresAt: link.expiresAt,
      // Text has no size; an image has its pixels, a PDF its first page in points.
      ...(info.contentType.startsWith('image/') || info.contentType === CAPTURE_CONTENT_TYPES.pdf
        ? { width: info.width, height: info.height }
        : { width: null, height: null }),
      bytes: info.bytes,
    };
  }

  return {
    /**
     * The cached answer, when the request asks for the cache and an entry is fresh: younger than the entry's own TTL
     * and than the `cacheTtl` of this request. Free; the caller has already counted it against the rate limit. A 304
     * (If-None-Match naming the entry's ETag) and a link need only the entry's metadata, never its bytes, nor does a
     * hit larger than the request's `inlineHitBytes`, answered with a link too.
     */
    async fromCache(
      accountId: string,
      request: DeliveryRequest,
      ifNoneMatch: string | undefined,
    ): Promise<Screenshot | undefined> {
      if (request.cacheKey === undefined) return undefined;
      const key = imageKey.cached(accountId, request.cacheKey);
      const now = deps.now();
      const freshUntil = (info: StoredImageInfo) =>
        Math.min(info.expiresAt, info.storedAt + request.cacheTtl * 1000);
      const fresh = (info: StoredImageInfo) => now < freshUntil(info);
      const answer = (info: StoredImageInfo): Screenshot => ({
        contentType: info.contentType,
        etag: info.etag,
        creditsCharged: 0,
        truncated: info.truncated,
        cache: 'HIT',
        ...(info.metadata ? { metadata: info.metadata } : {}),
        freshForSeconds: secondsUntil(freshUntil(info), now),
      });
      // A link to a copy of its own: the entry may be captured again within the link's hour (red team). One copy for
      // each version of the entry, written again by each hit: a signed link's hits are free and unbudgeted, and a
      // copy per hit stored without bound (red team).
      const linkedHit = async (info: StoredImageInfo): Promise<Screenshot | undefined> => {
        const linked = imageKey.linked(accountId, hitCopyId(key, info.etag));
        const copied = await deps.images.copyIfUnchanged(key, linked, info.etag, now, linkExpiry(now));
        return copied ? { ...answer(info), link: await linkTo(linked, info) } : undefined;
      };

      if (ifNoneMatch !== undefined || request.response === 'json') {
        const info = await deps.images.head(key);
        if (!info || !fresh(info)) return undefined;
        // A JSON answer is never 304: its body (a link that dies within the hour) changes each time, though the
        // ETag it carries, the image's, does not (red team, round 22: a 304 told a client to keep a dead link).
        if (ifNoneMatch !== undefined && request.response !== 'json' && etagMatches(ifNoneMatch, info.etag)) {
          return { ...answer(info), notModified: true };
        }
        if (request.response === 'json') return linkedHit(info);
      }
      const stored = await deps.images.get(key, request.inlineHitBytes);
      if (!stored || !fresh(stored.info)) return undefined;
      if (!stored.image) return linkedHit(stored.info).then((hit) => hit && { ...hit, redirected: true });
      return { ...answer(stored.info), image: stored.image };
    },

    /**
     * Delivers a fresh capture: as it is when neither the cache nor a link was asked for; otherwise stored first. For
     * a link the store must succeed (the caller refunds when it throws); for the cache a failed store costs only the
     * next request's hit, so the paid-for image or link is still answered.
     */
    async deliver(accountId: string, request: DeliveryRequest, captured: CapturedImage): Promise<Screenshot> {
      const { cacheKey } = request;
      if (cacheKey === undefined && request.response === 'image') return captured;
      const now = deps.now();
      const { image: _, ...described } = captured;
      if (cacheKey === undefined) {
        const key = imageKey.linked(accountId, randomUUID());
        const info = storedInfoOf(captured, now, linkExpiry(now));
        await deps.images.put(key, captured.image, info);
        return { ...described, link: await linkTo(key, info) };
      }
      const info = storedInfoOf(captured, now, now + request.cacheTtl * 1000);
      let link: ImageLink | undefined;
      if (request.response === 'json') {
        // The link downloads exactly these bytes for its hour: an object of its own, not the cache entry, which
        // another miss of the same request may replace meanwhile (red team). Stored before the entry: when it fails
        // the request is refunded, and an entry stored beside it served the retry for free (red team, round 31).
        const linked = imageKey.linked(accountId, randomUUID());
        const { metadata: __, ...linkedInfo } = info;
        await deps.images.put(linked, captured.image, { ...linkedInfo, expiresAt: linkExpiry(now) });
        link = await linkTo(linked, info);
      }
      // Not stored, not in the cache: no shared cache should keep it for the entry's lifetime either.
      const kept = await deps.images.put(imageKey.cached(accountId, cacheKey), captured.image, info).then(
        () => true,
        (error) => {
          logger.warn('Cache entry not stored', { error });
          return false;
        },
      );
      return {
        ...(link ? { ...described, link } : captured),
        cache: 'MISS',
        ...(kept ? { freshForSeconds: secondsUntil(info.expiresAt, now) } : {}),
      };
    },
  };
}

export type ImageDelivery = ReturnType<typeof imageDelivery>;

/** A fresh capture that deliver() stored in the account's cache: it sets the entry's lifetime only once it is stored. */
export function keptInCache(screenshot: Screenshot): boolean {
  return screenshot.cache === 'MISS' && screenshot.freshForSeconds !== undefined;
}

/** What is stored beside a fresh capture, kept from `storedAt` until `expiresAt` (ms). */
export function storedInfoOf(captured: CapturedImage, storedAt: number, expiresAt: number): StoredImageInfo {
  const { width = 0, height = 0 } = sizeOf(captured);
  return {
    contentType: captured.contentType,
    etag: captured.etag,
    bytes: captured.image.length,
    width,
    height,
    truncated: captured.truncated,
    storedAt,
    expiresAt,
    ...(captured.metadata ? { metadata: captured.metadata } : {}),
  };
}

/** The name of a cache entry's copy for links to its version `etag`: the same for every hit on it. */
function hitCopyId(entryKey: string, etag: string): string {
  return `hit-${createHash('sha256').update(`${entryKey}\n${etag}`).digest('hex')}`;
}

/** When an object stored only to be linked to may go (ms): its link's lifetime after `now`. */
function linkExpiry(now: number): number {
  return now + IMAGE_LINK_LIFETIME_SECONDS * 1000;
}

/** Whole seconds from `now` until `until` (ms), rounded down: a shared cache never keeps an entry past its freshness. */
function secondsUntil(until: number, now: number): number {
  return Math.max(0, Math.floor((until - now) / 1000));
}

/** An image's pixel size, read from its header; a PDF's first page in points (1/72 in); text has none. */
function sizeOf(captured: CapturedImage): { width?: number; height?: number } {
  if (captured.contentType === CAPTURE_CONTENT_TYPES.pdf) return pdfPageSize(captured.image);
  return captured.contentType.startsWith('image/') ? imageSize(captured.image) : {};
}

/** RFC 9110 If-None-Match: `*`, or a list of entity tags compared weakly (a `W/` prefix is ignored). */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .includes(etag);
}
