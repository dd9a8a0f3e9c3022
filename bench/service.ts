import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EmbeddedDynamo, startEmbeddedDynamo } from '../local/embeddedDynamo';
import { localSigningKeyFile, startEmbeddedS3 } from '../local/embeddedS3';
import { ephemeralIdentityProvider } from '../local/ephemeralIdp';
import { LocalRenderer } from '../local/renderer/localRenderer';
import type { CaptureResult, Renderer } from '../shared/capture/renderer';
import { readServiceConfig } from '../shared/config';
import { createUrlPolicy } from '../shared/egress/urlPolicy';
import { createKeyManagement } from '../shared/wiring/keyManagement';
import { screenshotLambda } from '../shared/wiring/lambdaHandlers';
import { createScreenshotService, screenshotUseCase } from '../shared/wiring/screenshot';
import { createStores } from '../shared/wiring/stores';
import { type BenchResponse, invokeStreaming, screenshotEvent } from './invoke';

export const BENCH_TABLE = 'screenshot-bench';
/** Enough credits and rate-limit room that no scenario is ever refused. */
const PLENTY = 1_000_000_000;

/**
 * The embedded DynamoDB (dynalite on a loopback port, in memory), the local S3 API in a throwaway folder, and one
 * account with one API key.
 */
export interface BenchStore {
  dynamo: EmbeddedDynamo;
  env: Record<string, string>;
  apiKey: string;
  close(): Promise<void>;
}

export async function startBenchStore(allowPrivateHosts: string): Promise<BenchStore> {
  const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-bench-'));
  const [dynamo, s3] = await Promise.all([
    startEmbeddedDynamo({ tableName: BENCH_TABLE }),
    startEmbeddedS3({ dataDir }),
  ]);
  const idp = ephemeralIdentityProvider();
  const env: Record<string, string> = {
    ...s3.env,
    SIGNING_KEY_FILE: localSigningKeyFile(dataDir),
    TABLE_NAME: BENCH_TABLE,
    RATE_LIMIT_PER_HOUR: String(PLENTY),
    FREE_CREDITS: '0',
    ALLOW_PRIVATE_HOSTS: allowPrivateHosts,
    ...idp.env,
  };
  const management = createKeyManagement(dynamo.client, env, idp.jwks);
  const accountId = 'bench-account';
  const created = await management.createKey(idp.token(accountId), () => ({ name: 'bench' }));
  await createStores(dynamo.client, readServiceConfig(env)).credits.set(accountId, PLENTY);
  return {
    dynamo,
    env,
    apiKey: created.key,
    async close() {
      await Promise.all([dynamo.close(), s3.close()]);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The real screenshot front as the Lambda entry builds it, and the renderer process it invokes. */
export interface BenchService {
  shoot(body: Record<string, unknown>): Promise<BenchResponse>;
  close(): Promise<void>;
}

export async function startOurService(store: BenchStore, env: NodeJS.ProcessEnv = {}): Promise<BenchService> {
  const fullEnv = { ...process.env, ...store.env, ...env };
  // Through the boundary: the renderer is a process of its own, invoked as the deployed front invokes it.
  const renderer = new LocalRenderer({ env: fullEnv });
  const service = createScreenshotService(store.dynamo.client, fullEnv, { renderer });
  await renderer.warmUp();
  return {
    shoot: (body) => invokeStreaming(screenshotLambda(service), screenshotEvent(store.apiKey, body)),
    close: () => service.close(),
  };
}

/** Stands in for Chromium so that only admission (and the answer) is timed. */
const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const instantRenderer: Renderer = {
  capture: async (): Promise<CaptureResult> => ({
    image: TINY_PNG,
    contentType: 'image/png',
    truncated: false,
  }),
  warmUp: async () => undefined,
  settle: async () => undefined,
  close: async () => undefined,
};

/**
 * The real handler with the renderer swapped for one that answers at once: authentication, rate limit, lastUsed,
 * validation, URL policy and the credit reservation against the embedded store, then the streamed answer (the usage
 * record is written after it, as deployed).
 */
export function admissionOnly(store: BenchStore): {
  shoot(body: Record<string, unknown>): Promise<BenchResponse>;
} {
  const config = readServiceConfig(store.env);
  const handler = screenshotLambda(
    screenshotUseCase(
      createStores(store.dynamo.client, config),
      instantRenderer,
      createUrlPolicy({ allowPrivateHosts: config.allowPrivateHosts }),
      store.env,
    ),
  );
  return { shoot: (body) => invokeStreaming(handler, screenshotEvent(store.apiKey, body)) };
}
