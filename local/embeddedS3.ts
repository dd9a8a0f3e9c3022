import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import S3rver from 's3rver';
import { ownPorts } from '../shared/egress/ownPorts';
import { loadOrCreateKey } from '../shared/store/fileSecretCipher';
import { createS3Client } from '../shared/store/s3ImageStore';
import { type DiskRoom, diskRoom } from './diskSpace';
import { startExpirySweep } from './expirySweep';
import { answerOnly } from './ownClients';
import { ownerOnlyDir } from './ownerOnlyDir';
import { GATE_HEADER, startS3SignatureGate } from './s3SignatureGate';
import { localCredentials } from './sigV4Verifier';

/**
 * The local S3 API: s3rver (S3's REST API, objects as files) on a loopback port, its data under `<dataDir>/s3`, with
 * the image bucket created on start, behind a gate that checks every request's SigV4 signature with credentials of
 * this data dir (s3rver checks none). The service talks to the gate with the same S3 client code as to S3, and
 * pre-signed links point at it. The gate keeps its port across restarts (remembered under the data dir, reused when
 * free), so links handed out before a restart still work after it. Expired images are swept as S3's lifecycle rules
 * remove them deployed (expirySweep.ts).
 */
export interface EmbeddedS3 {
  endpoint: string;
  /** s3rver's own port, behind the gate: it answers the gate alone. */
  backendPort: number;
  bucket: string;
  /** The settings that point the service at it (shared/wiring/delivery.ts). */
  env: {
    S3_ENDPOINT: string;
    IMAGE_BUCKET: string;
    LOCAL_S3_ACCESS_KEY_ID: string;
    LOCAL_S3_SECRET_ACCESS_KEY: string;
  };
  close(): Promise<void>;
}

export const LOCAL_IMAGE_BUCKET = 'screenshot-images';
/** The region the local S3 client signs for (shared/store/s3ImageStore.ts); the gate accepts only this one. */
const LOCAL_S3_REGION = 'us-east-1';

export async function startEmbeddedS3(options: {
  dataDir: string;
  /** Whether a write has room on the disk (diskSpace.ts); by default the data dir's disk, less its reserve. */
  diskRoom?: DiskRoom;
  /** The sweep of expired images' clock (ms). */
  clock?: () => number;
}): Promise<EmbeddedS3> {
  const directory = await ownerOnlyDir(join(options.dataDir, 's3'));
  const writesNeedRoom = options.diskRoom ?? diskRoom(directory);
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory,
    silent: true,
    configureBuckets: [{ name: LOCAL_IMAGE_BUCKET }],
  });
  const { port: upstreamPort } = await server.run();
  const leaveOwnPorts = ownPorts.add(upstreamPort);
  // s3rver checks no signature and listens on a port anyone on the machine can reach: it answers the gate alone.
  const upstreamToken = randomBytes(32).toString('hex');
  if (!server.httpServer) throw new Error('s3rver started without its HTTP server');
  answerOnly(server.httpServer, fromGate(upstreamToken));
  const credentials = localCredentials('LOCALS3', await loadOrCreateKey(localS3SecretFile(options.dataDir)));
  const portFile = join(options.dataDir, 's3-port');
  const remembered = Number(await readFile(portFile, 'utf8').catch(() => '0')) || 0;
  const startGate = (port: number) =>
    startS3SignatureGate({
      upstreamPort,
      upstreamToken,
      credentials,
      region: LOCAL_S3_REGION,
      port,
      writesNeedRoom,
    });
  // The remembered port may have been taken by something else meanwhile: then any free one, remembered instead.
  const gate = await startGate(remembered)
    .catch((error: NodeJS.ErrnoException) => {
      if (remembered === 0 || error.code !== 'EADDRINUSE') throw error;
      return startGate(0);
    })
    .catch(async (error) => {
      leaveOwnPorts();
      await server.close();
      throw error;
    });
  await writeFile(portFile, String(gate.port));
  const endpoint = `http://127.0.0.1:${gate.port}`;
  const sweepClient = createS3Client({ url: endpoint, credentials });
  const sweep = startExpirySweep(sweepClient, LOCAL_IMAGE_BUCKET, options.clock);
  return {
    endpoint,
    backendPort: upstreamPort,
    bucket: LOCAL_IMAGE_BUCKET,
    env: {
      S3_ENDPOINT: endpoint,
      IMAGE_BUCKET: LOCAL_IMAGE_BUCKET,
      LOCAL_S3_ACCESS_KEY_ID: credentials.accessKeyId,
      LOCAL_S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    },
    async close() {
      await sweep.stop();
      sweepClient.destroy();
      await gate.close();
      await server.close();
      leaveOwnPorts();
    },
  };
}

/** Whether a request to s3rver came through the gate, which alone sends `token`. */
function fromGate(token: string): (req: IncomingMessage) => boolean {
  const expected = Buffer.from(token);
  return (req) => {
    const given = Buffer.from(String(req.headers[GATE_HEADER] ?? ''));
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
}

/** Where the local S3 API's secret access key lives: under DATA_DIR, beside the images but not among them. */
function localS3SecretFile(dataDir: string): string {
  return join(dataDir, 'secrets', 's3-secret.key');
}

/** Where the local key that seals signing secrets lives: under DATA_DIR, beside the table but not in it. */
export function localSigningKeyFile(dataDir: string): string {
  return join(dataDir, 'secrets', 'signing-secrets.key');
}
