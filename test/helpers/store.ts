import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { type EmbeddedDynamo, startEmbeddedDynamo } from '../../local/embeddedDynamo';
import { type EmbeddedS3, localSigningKeyFile, startEmbeddedS3 } from '../../local/embeddedS3';
import type { StoredImageInfo } from '../../shared/delivery/imageStore';
import { createS3Client } from '../../shared/store/s3ImageStore';

export const TEST_TABLE = 'screenshot-test';

/** DynamoDB's API over HTTP (dynalite, in memory) with the service's table. */
export function startTestStore(): Promise<EmbeddedDynamo> {
  return startEmbeddedDynamo({ tableName: TEST_TABLE });
}

/** Every item of the table as raw JSON text, to prove what is (not) stored. */
export async function dumpTable(store: EmbeddedDynamo): Promise<string> {
  const { Items } = await store.client.send(new ScanCommand({ TableName: TEST_TABLE, ConsistentRead: true }));
  return JSON.stringify(Items ?? []);
}

/**
 * The local S3 API (s3rver) on a free loopback port with a throwaway data dir, and a throwaway key file for the
 * signing secrets: `env` points the service's wiring at both.
 */
export async function startTestDelivery(): Promise<{
  s3: EmbeddedS3;
  env: Record<string, string>;
  close(): Promise<void>;
}> {
  const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-delivery-'));
  const s3 = await startEmbeddedS3({ dataDir });
  return {
    s3,
    env: { ...s3.env, SIGNING_KEY_FILE: localSigningKeyFile(dataDir) },
    async close() {
      await s3.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A client of the local S3 API signing as the service does, with the credentials of its data dir. */
export function localS3Client(s3: EmbeddedS3): S3Client {
  return createS3Client({
    url: s3.endpoint,
    credentials: {
      accessKeyId: s3.env.LOCAL_S3_ACCESS_KEY_ID,
      secretAccessKey: s3.env.LOCAL_S3_SECRET_ACCESS_KEY,
    },
  });
}

/**
 * What is stored beside a 1x1 PNG of `bytes` for an hour from now; its etag by default S3's own of the bytes (MD5),
 * as a capture's is, so that a copy made only while the source still has it (copyIfUnchanged) is made.
 */
export function imageInfo(
  bytes: Buffer,
  etag = `"${createHash('md5').update(bytes).digest('hex')}"`,
): StoredImageInfo {
  return {
    contentType: 'image/png',
    etag,
    bytes: bytes.length,
    width: 1,
    height: 1,
    truncated: false,
    storedAt: Date.now(),
    expiresAt: Date.now() + 3_600_000,
  };
}
