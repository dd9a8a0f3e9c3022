import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type EmbeddedS3, LOCAL_IMAGE_BUCKET, startEmbeddedS3 } from '../../local/embeddedS3';
import { sweepExpired } from '../../local/expirySweep';
import { S3ImageStore } from '../../shared/store/s3ImageStore';
import { imageInfo, localS3Client } from '../helpers/store';

/**
 * Red team (round 30): the local S3 API (s3rver) has no lifecycle rules, so every image a local service stored stayed
 * until DATA_DIR was deleted (46 MB a credit: the free grant bought 4.6 GB for good). The local sweep removes each
 * object when S3's rule deployed would, on the real s3rver behind its signature gate.
 */

const DAY = 86_400_000;
let dataDir: string;
let s3: EmbeddedS3 | undefined;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'expiry-sweep-'));
});

afterAll(async () => {
  await s3?.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function keys(server: EmbeddedS3): Promise<string[]> {
  const listed = await localS3Client(server).send(new ListObjectsV2Command({ Bucket: LOCAL_IMAGE_BUCKET }));
  return (listed.Contents ?? []).map(({ Key }) => Key ?? '').sort();
}

/** An image kept for `days` (its info's expiry), with its page's metadata beside it. */
async function store(server: EmbeddedS3, key: string, days: number): Promise<void> {
  const bytes = Buffer.from(key);
  const info = { ...imageInfo(bytes), expiresAt: Date.now() + days * DAY, metadata: { title: key } };
  await new S3ImageStore(localS3Client(server), LOCAL_IMAGE_BUCKET).put(key, bytes, info as never);
}

describe('the local sweep of expired images', () => {
  it('removes each image, with its metadata, once its lifecycle rule would have', async () => {
    s3 = await startEmbeddedS3({ dataDir });
    // Rules of 2, 8 and 31 days (EXPIRY_DAYS): an hour's link copy, a day's cache entry, a job's 7 days, 30 days.
    await store(s3, 'images/a/link', 1 / 24);
    await store(s3, 'images/a/job', 7);
    await store(s3, 'images/a/month', 30);
    const client = localS3Client(s3);
    const all = await keys(s3);
    expect(all).toHaveLength(6);
    expect(await sweepExpired(client, LOCAL_IMAGE_BUCKET, Date.now() + DAY)).toBe(0);
    expect(await sweepExpired(client, LOCAL_IMAGE_BUCKET, Date.now() + 3 * DAY)).toBe(1);
    expect(await keys(s3)).toEqual(all.filter((key) => !key.startsWith('images/a/link')));
    expect(await sweepExpired(client, LOCAL_IMAGE_BUCKET, Date.now() + 9 * DAY)).toBe(1);
    expect(await keys(s3)).toEqual(['images/a/month', 'images/a/month.metadata.json']);
    await sweepExpired(client, LOCAL_IMAGE_BUCKET, Date.now() + 32 * DAY);
    expect(await keys(s3)).toEqual([]);
    client.destroy();
  });

  it('runs when the local S3 API starts (npm start), and leaves an image still kept', async () => {
    await store(s3 as EmbeddedS3, 'images/b/link', 1 / 24);
    await store(s3 as EmbeddedS3, 'images/b/job', 7);
    await s3?.close();
    s3 = await startEmbeddedS3({ dataDir, clock: () => Date.now() + 3 * DAY });
    const server = s3;
    await vi.waitFor(
      async () => expect(await keys(server)).toEqual(['images/b/job', 'images/b/job.metadata.json']),
      {
        timeout: 10_000,
      },
    );
  });

  it('leaves an object the service did not write, whatever its age', async () => {
    const server = s3 as EmbeddedS3;
    const client = localS3Client(server);
    await client.send(new PutObjectCommand({ Bucket: LOCAL_IMAGE_BUCKET, Key: 'someone/else', Body: 'x' }));
    await sweepExpired(client, LOCAL_IMAGE_BUCKET, Date.now() + 365 * DAY);
    expect(await keys(server)).toContain('someone/else');
    client.destroy();
  });
});
