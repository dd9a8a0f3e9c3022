import {
  DeleteObjectCommand,
  HeadObjectCommand,
  paginateListObjectsV2,
  type S3Client,
} from '@aws-sdk/client-s3';
import { EXPIRY_DAYS, expiryDays } from '../shared/delivery/imageStore';
import { logger } from '../shared/logger';
import { infoOf, PAGE_METADATA_SUFFIX } from '../shared/store/s3ImageStore';

const DAY_MS = 86_400_000;
/** The longest lifecycle rule: a page's metadata object without its image goes after it. */
const LONGEST_DAYS = Math.max(...EXPIRY_DAYS);
/** How often the local server sweeps: S3 runs its lifecycle rules about once a day. */
export const SWEEP_EVERY_MS = 60 * 60 * 1000;

/**
 * The image bucket's lifecycle rules, run locally. Deployed, S3 removes each object `expires-after-days` days after it
 * was written (infra: one rule per value of the tag); s3rver has no lifecycle rules and keeps no tags written with an
 * object, so a local DATA_DIR kept every image for good (red team, round 30: 46 MB for a credit, the free grant's
 * 4.6 GB never given back). The same days here, worked out from the object's own metadata as the tag was
 * (`expiryDays`), counted from when it was written, as S3 counts. A page's metadata object goes with its image, or
 * after the longest rule when it has none. Returns how many objects went.
 */
export async function sweepExpired(s3: S3Client, bucket: string, now: number): Promise<number> {
  let removed = 0;
  const remove = async (Key: string) => {
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key }));
    removed++;
  };
  for await (const page of paginateListObjectsV2({ client: s3 }, { Bucket: bucket })) {
    for (const { Key, LastModified } of page.Contents ?? []) {
      if (Key === undefined || LastModified === undefined) continue;
      const writtenAt = LastModified.getTime();
      if (Key.endsWith(PAGE_METADATA_SUFFIX)) {
        if (writtenAt + LONGEST_DAYS * DAY_MS <= now) await remove(Key);
        continue;
      }
      const days = await keptDays(s3, bucket, Key);
      if (days === undefined || writtenAt + days * DAY_MS > now) continue;
      await remove(Key);
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: `${Key}${PAGE_METADATA_SUFFIX}` }));
    }
  }
  return removed;
}

/** The days the object's lifecycle tag names, from its metadata; undefined for an object the service did not write. */
async function keptDays(s3: S3Client, bucket: string, Key: string): Promise<number | undefined> {
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key })).catch(() => undefined);
  const info = head && infoOf(head);
  return info && expiryDays(info.storedAt, info.expiresAt);
}

/** Sweeps at once and then every SWEEP_EVERY_MS until stopped; a failed sweep is logged and tried at the next. */
export function startExpirySweep(
  s3: S3Client,
  bucket: string,
  clock: () => number = Date.now,
): {
  stop(): Promise<void>;
} {
  let running: Promise<void> | undefined;
  const sweep = () => {
    running ??= sweepExpired(s3, bucket, clock())
      .then(
        (removed) => {
          if (removed > 0) logger.info('Expired images removed', { removed });
        },
        (error: unknown) => logger.warn('Expired images not swept', { error: error as Error }),
      )
      .finally(() => {
        running = undefined;
      });
  };
  sweep();
  const timer = setInterval(sweep, SWEEP_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
