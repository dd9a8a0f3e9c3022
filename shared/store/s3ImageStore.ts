import {
  CopyObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { PageMetadata } from '../capture/renderer';
import {
  EXPIRY_DAYS,
  EXPIRY_TAG,
  expiryDays,
  type ImageStore,
  type LinkTimes,
  type StoredImageInfo,
} from '../delivery/imageStore';
import { StoreUnavailableError } from '../errors';
import { logger } from '../logger';
import { opensInline } from '../screenshot/outputFields';
import { HeldCopies } from './heldCopies';

/** The page metadata of a capture that asked for it lives in an object of its own: the image's key + this. */
export const PAGE_METADATA_SUFFIX = '.metadata.json';
const PAGE_METADATA_FLAG = 'page-metadata';

/**
 * S3's answers for "no such object" (HEAD has no body, so only a name; GET says NoSuchKey), and for a copy whose
 * source no longer has the ETag it was asked for.
 */
const MISSING = new Set(['NotFound', 'NoSuchKey', 'PreconditionFailed']);

/**
 * Images in an S3 bucket, what is known about each in the object's own metadata (`x-amz-meta-*`), so one HEAD or
 * GET answers a cache lookup and no table item can disagree with the object it describes. The same code talks to
 * S3 deployed and to the local S3 API (s3rver) of `npm start` and the tests.
 */
export class S3ImageStore implements ImageStore {
  /** Answers still being sent share their entry's bytes (visitors who stop reading, heldCopies.ts). */
  private readonly held = new HeldCopies();

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  async put(key: string, image: Buffer, info: StoredImageInfo): Promise<void> {
    // The object's own lifecycle rule removes it once its cacheTtl (or link lifetime) has passed.
    const Tagging = `${EXPIRY_TAG}=${expiryDays(info.storedAt, info.expiresAt)}`;
    // The page's metadata can outgrow S3's 2 KB of object metadata: it is an object of its own beside the image,
    // written first so that an image that says it has one always finds it.
    if (info.metadata) {
      await this.call(() =>
        this.s3.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: `${key}${PAGE_METADATA_SUFFIX}`,
            Body: JSON.stringify(info.metadata),
            ContentType: 'application/json',
            Tagging,
          }),
        ),
      );
    }
    await this.call(() =>
      this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: image,
          ContentType: info.contentType,
          ...(opensInline(info.contentType) ? {} : { ContentDisposition: 'attachment' }),
          Tagging,
          Metadata: {
            etag: info.etag,
            width: String(info.width),
            height: String(info.height),
            truncated: String(info.truncated),
            'stored-at': String(info.storedAt),
            'expires-at': String(info.expiresAt),
            ...(info.metadata ? { [PAGE_METADATA_FLAG]: 'beside' } : {}),
          },
        }),
      ),
    );
  }

  async head(key: string): Promise<StoredImageInfo | undefined> {
    const object = await this.call(() =>
      this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key })),
    );
    return object && this.withPageMetadata(key, object, infoOf(object));
  }

  async get(
    key: string,
    maxBytes = Number.POSITIVE_INFINITY,
  ): Promise<{ image?: Buffer; info: StoredImageInfo } | undefined> {
    const object = await this.call(async () => {
      const answer = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if ((answer.ContentLength ?? 0) > maxBytes) {
        // Its size came with the headers: the body is left unread, and its connection closed rather than drained.
        (answer.Body as { destroy?: () => void } | undefined)?.destroy?.();
        return { answer };
      }
      const image = await bodyBytes(answer.Body);
      return { answer, image: answer.ETag ? this.held.share(key, answer.ETag, image) : image };
    });
    if (!object) return undefined;
    const info = await this.withPageMetadata(key, object.answer, infoOf(object.answer));
    return info && { ...(object.image ? { image: object.image } : {}), info };
  }

  /** The info, with the page metadata stored beside the object when the object says there is one. */
  private async withPageMetadata(
    key: string,
    object: { Metadata?: Record<string, string> },
    info: StoredImageInfo | undefined,
  ): Promise<StoredImageInfo | undefined> {
    if (!info || object.Metadata?.[PAGE_METADATA_FLAG] !== 'beside') return info;
    const metadata = await this.pageMetadata(key);
    // Without its metadata the entry cannot answer a request that asked for it: treated as missing.
    return metadata && { ...info, metadata };
  }

  async pageMetadata(key: string): Promise<PageMetadata | undefined> {
    const stored = await this.call(async () => {
      const answer = await this.s3.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: `${key}${PAGE_METADATA_SUFFIX}` }),
      );
      return answer.Body && (await bodyBytes(answer.Body)).toString('utf8');
    });
    return stored ? (JSON.parse(stored) as PageMetadata) : undefined;
  }

  async copyIfUnchanged(
    from: string,
    to: string,
    etag: string,
    storedAt: number,
    expiresAt: number,
  ): Promise<boolean> {
    if (await this.keptUntil(to, etag, expiresAt)) return true;
    const answer = await this.call(() =>
      this.s3.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: to,
          CopySource: `${this.bucket}/${from.split('/').map(encodeURIComponent).join('/')}`,
          CopySourceIfMatch: etag,
          // Its type, disposition and metadata are the source's; its lifetime is its own.
          TaggingDirective: 'REPLACE',
          Tagging: `${EXPIRY_TAG}=${expiryDays(storedAt, expiresAt)}`,
        }),
      ),
    );
    // The copy's own ETag too: s3rver ignores CopySourceIfMatch (the local gate checks it just before, s3SignatureGate.ts).
    return answer?.CopyObjectResult?.ETag === etag;
  }

  /**
   * Whether `key` already holds the bytes `etag` names, written recently enough that no lifecycle rule removes it
   * before `expiresAt` (ms): a copy made by an earlier hit on the same version, which a later hit links to again
   * instead of copying up to 190 MiB anew (red team: a signed link's hits are free, and each was a server-side copy).
   * No rule removes an object sooner than the shortest expiry class after it was written.
   */
  private async keptUntil(key: string, etag: string, expiresAt: number): Promise<boolean> {
    const object = await this.call(() =>
      this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key })),
    );
    const written = object?.LastModified?.getTime();
    return (
      object?.Metadata?.etag === etag &&
      written !== undefined &&
      written + EXPIRY_DAYS[0] * 86_400_000 >= expiresAt
    );
  }

  signedUrl(key: string, link: LinkTimes): Promise<string> {
    return getSignedUrl(this.s3, new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
      expiresIn: link.seconds,
      signingDate: new Date(link.signedAt),
    });
  }

  /** Runs one S3 call: a missing object is undefined, any other failure a 503 (nothing was done; try again). */
  private async call<T>(send: () => Promise<T>): Promise<T | undefined> {
    try {
      return await send();
    } catch (error) {
      if (error instanceof Error && MISSING.has(error.name)) return undefined;
      logger.error('Image store call failed', { error: error instanceof Error ? error : String(error) });
      throw new StoreUnavailableError();
    }
  }
}

/**
 * An object's body, read here rather than with the SDK's transformToByteArray or transformToString, whose collector
 * kept every chunk (the whole object again) for as long as the connection stayed open for reuse. In Node the body is
 * a Readable.
 */
async function bodyBytes(body: unknown): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of (body ?? []) as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The stored facts, or undefined for an object that lacks them (not written by this service). */
export function infoOf(object: {
  ContentType?: string;
  ContentLength?: number;
  Metadata?: Record<string, string>;
}): StoredImageInfo | undefined {
  const meta = object.Metadata ?? {};
  const numbers = [meta.width, meta.height, meta['stored-at'], meta['expires-at']].map(Number);
  if (!object.ContentType || !meta.etag || numbers.some((n) => !Number.isFinite(n))) return undefined;
  const [width = 0, height = 0, storedAt = 0, expiresAt = 0] = numbers;
  return {
    contentType: object.ContentType,
    etag: meta.etag,
    bytes: object.ContentLength ?? 0,
    width,
    height,
    truncated: meta.truncated === 'true',
    storedAt,
    expiresAt,
  };
}

/** The local S3 API: its address and the credentials of its data dir (local/embeddedS3.ts). */
export interface LocalS3Endpoint {
  url: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
}

/**
 * The S3 client: bounded waits like the DynamoDB client's. With an endpoint (the local S3 API) it uses path-style
 * addresses and the local server's credentials.
 */
export function createS3Client(endpoint?: LocalS3Endpoint, config: S3ClientConfig = {}): S3Client {
  return new S3Client({
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 1_000, requestTimeout: 15_000, throwOnRequestTimeout: true },
    ...(endpoint
      ? {
          endpoint: endpoint.url,
          region: 'us-east-1',
          forcePathStyle: true,
          credentials: endpoint.credentials,
        }
      : {}),
    ...config,
  });
}
