import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { EXPIRY_TAG } from '../../shared/delivery/imageStore';
import { S3ImageStore } from '../../shared/store/s3ImageStore';
import { restoredAfterFile } from '../helpers/restoredAfterFile';

const s3 = restoredAfterFile(mockClient(S3Client));
const DAY = 86_400_000;
const info = (lifetimeMs: number, withMetadata = false) => ({
  contentType: 'image/png',
  etag: '"abc"',
  bytes: 3,
  width: 1,
  height: 1,
  truncated: false,
  storedAt: 0,
  expiresAt: lifetimeMs,
  ...(withMetadata ? { metadata: { title: 'Known page' } as never } : {}),
});

beforeEach(() => {
  s3.reset();
  s3.on(PutObjectCommand).resolves({});
});

describe('a stored image', () => {
  it('is tagged to expire with its own cacheTtl, and its metadata object with it', async () => {
    const store = new S3ImageStore(new S3Client({ region: 'eu-west-1' }), 'images-bucket');
    await store.put('images/cache/a/b', Buffer.from('png'), info(3600 * 1000, true));
    await store.put('images/cache/a/c', Buffer.from('png'), info(30 * DAY));
    expect(s3.commandCalls(PutObjectCommand).map((call) => call.args[0].input.Tagging)).toEqual([
      `${EXPIRY_TAG}=2`,
      `${EXPIRY_TAG}=2`,
      `${EXPIRY_TAG}=31`,
    ]);
  });
});
