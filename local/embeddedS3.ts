import { join } from 'node:path';
import S3rver from 's3rver';

/**
 * The local S3 API: s3rver (S3's REST API, objects as files) on a loopback port, its data under
 * `<dataDir>/s3`, with the image bucket created on start. The service talks to it with the same S3 client code as to
 * S3, and pre-signed links point at it.
 */
export interface EmbeddedS3 {
  endpoint: string;
  bucket: string;
  /** The settings that point the service at it (shared/wiring/delivery.ts). */
  env: { S3_ENDPOINT: string; IMAGE_BUCKET: string };
  close(): Promise<void>;
}

export const LOCAL_IMAGE_BUCKET = 'screenshot-images';

export async function startEmbeddedS3(options: { dataDir: string; port?: number }): Promise<EmbeddedS3> {
  const server = new S3rver({
    address: '127.0.0.1',
    port: options.port ?? 0,
    directory: join(options.dataDir, 's3'),
    silent: true,
    configureBuckets: [{ name: LOCAL_IMAGE_BUCKET }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket: LOCAL_IMAGE_BUCKET,
    env: { S3_ENDPOINT: endpoint, IMAGE_BUCKET: LOCAL_IMAGE_BUCKET },
    close: () => server.close(),
  };
}

/** Where the local key that seals signing secrets lives: under DATA_DIR, beside the table but not in it. */
export function localSigningKeyFile(dataDir: string): string {
  return join(dataDir, 'secrets', 'signing-secrets.key');
}
