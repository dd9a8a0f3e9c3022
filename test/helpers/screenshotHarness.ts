import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import sharp from 'sharp';
import { apiGatewayEvent, type RouteEventOptions, routeEvent } from '../../local/apiGatewayEvent';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { ephemeralIdentityProvider } from '../../local/ephemeralIdp';
import { invocationContext } from '../../local/invocationContext';
import { type BufferedResponse, invokeStreaming } from '../../local/invokeStreaming';
import { LocalRenderer } from '../../local/renderer/localRenderer';
import type { Renderer } from '../../shared/capture/renderer';
import { readServiceConfig } from '../../shared/config';
import type { KeyRouteName } from '../../shared/http/keyRoutes';
import type { CaptureBudgets } from '../../shared/timing';
import { createKeyManagement } from '../../shared/wiring/keyManagement';
import { keyLambdas, screenshotLambda, usageLambda } from '../../shared/wiring/lambdaHandlers';
import { createScreenshotService } from '../../shared/wiring/screenshot';
import { createStores } from '../../shared/wiring/stores';
import { createUsageHistory } from '../../shared/wiring/usage';
import { startTestDelivery, startTestStore, TEST_TABLE } from './store';

export interface StreamedResponse extends BufferedResponse {
  json(): Record<string, unknown> & {
    details?: { code: string; path: (string | number)[]; message: string }[];
  };
}

export interface HarnessOptions {
  /**
   * The DynamoDB client the service's handlers use, built from the store (e.g. one through a fault proxy). The
   * harness's own `credits` ledger always talks to the store directly, so tests can read balances during an outage.
   */
  serviceClient?: (store: EmbeddedDynamo) => Promise<DynamoDBClient>;
  /** Shorter capture budgets than the specified 30 s + 30 s, so time-limit tests run quickly. */
  budgets?: CaptureBudgets;
  /** The renderer the front asks, over the local renderer process (e.g. behind Lambda's reserved concurrency). */
  renderer?: (local: LocalRenderer) => Renderer;
}

/**
 * The real screenshot handler (real Chromium, the embedded DynamoDB, real signed tokens), invoked with API Gateway
 * events through the streaming stand-in, plus the key-management routes to make accounts and keys.
 */
export async function startScreenshotHarness(env: Record<string, string> = {}, options: HarnessOptions = {}) {
  const [store, delivery] = await Promise.all([startTestStore(), startTestDelivery()]);
  const idp = ephemeralIdentityProvider();
  const fullEnv = { TABLE_NAME: TEST_TABLE, FREE_CREDITS: '100', ...idp.env, ...delivery.env, ...env };
  const serviceClient = options.serviceClient ? await options.serviceClient(store) : store.client;
  const management = keyLambdas(createKeyManagement(serviceClient, fullEnv, idp.jwks));
  const usage = usageLambda(createUsageHistory(serviceClient, fullEnv, idp.jwks));
  // Through the boundary, as deployed: the renderer is a process of its own, invoked with @aws-sdk/client-lambda.
  const renderer = new LocalRenderer({ env: { ...process.env, ...fullEnv }, budgets: options.budgets });
  const screenshot = createScreenshotService(serviceClient, fullEnv, {
    renderer: options.renderer ? options.renderer(renderer) : renderer,
    ...(options.budgets ? { budgets: options.budgets } : {}),
  });
  const screenshotHandler = screenshotLambda(screenshot);
  const { credits } = createStores(store.client, readServiceConfig(fullEnv));
  let accounts = 0;

  async function manage(route: KeyRouteName, options: RouteEventOptions) {
    const result = await management[route](routeEvent(route, options), invocationContext());
    return { status: result.statusCode, body: JSON.parse(result.body) };
  }

  const harness = {
    store,
    delivery,
    credits,
    renderer,
    manage,
    /** GET /api/usage with the session token and the query parameters. */
    async usage(token: string | undefined, query: Record<string, string> = {}) {
      const result = await usage(
        routeEvent('getUsage', { query, ...(token === undefined ? {} : { bearer: token }) }),
        invocationContext(),
      );
      return { status: result.statusCode, body: JSON.parse(result.body) };
    },
    /** A new account with one API key (and the free credits). */
    async newAccount() {
      const accountId = `acct-${++accounts}-${Math.random().toString(36).slice(2)}`;
      const token = idp.token(accountId);
      const created = await manage('createKey', { bearer: token, body: { name: 'test' } });
      return {
        accountId,
        token,
        apiKey: created.body.key as string,
        keyId: created.body.id as string,
        signingSecret: created.body.signingSecret as string,
      };
    },
    async addKey(token: string) {
      const created = await manage('createKey', { bearer: token, body: { name: 'another' } });
      return { apiKey: created.body.key as string, keyId: created.body.id as string };
    },
    /** POST /api/screenshot with the key as Bearer and `body` as JSON. */
    shoot(
      apiKey: string | undefined,
      body: unknown,
      options: Omit<RouteEventOptions, 'bearer' | 'body'> = {},
    ) {
      return invoke(
        routeEvent('screenshot', { ...options, body, ...(apiKey === undefined ? {} : { bearer: apiKey }) }),
      );
    },
    /** GET /api/screenshot with `query` (a signed link, as an <img> tag would load it; pairs may repeat a name). */
    open(query: Record<string, string> | [string, string][], headers: Record<string, string> = {}) {
      return invoke(
        apiGatewayEvent({
          method: 'GET',
          path: '/api/screenshot',
          resource: '/api/screenshot',
          query: new URLSearchParams(query),
          headers,
        }),
      );
    },
    async close() {
      await screenshot.close();
      // A renderer wrapped around the local one (options.renderer) closes only itself: the process is ours to end.
      if (options.renderer) await renderer.close();
      await store.close();
      await delivery.close();
    },
  };

  async function invoke(event: APIGatewayProxyEvent, timeoutMs?: number): Promise<StreamedResponse> {
    const response = await invokeStreaming(screenshotHandler, event, invocationContext(timeoutMs));
    return { ...response, json: () => JSON.parse(response.body.toString('utf8')) };
  }

  return { ...harness, invoke };
}

export type ScreenshotHarness = Awaited<ReturnType<typeof startScreenshotHarness>>;

/** Decoded facts about an image: format and pixel size from its bytes, and a pixel reader. */
export async function decodeImage(bytes: Buffer) {
  const image = sharp(bytes);
  const meta = await image.metadata();
  const { data, info } = await image.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return {
    format: meta.format,
    width: meta.width,
    height: meta.height,
    /** [r, g, b] at (x, y). */
    pixel(x: number, y: number): Rgb {
      const offset = (y * info.width + x) * info.channels;
      return [data[offset] ?? -1, data[offset + 1] ?? -1, data[offset + 2] ?? -1];
    },
  };
}

export type Rgb = [number, number, number];
export const RED: Rgb = [255, 0, 0];
export const GREEN: Rgb = [0, 255, 0];
export const BLUE: Rgb = [0, 0, 255];

/** True when two colours are within `tolerance` per channel (JPEG and WebP are lossy). */
export function near(actual: Rgb, expected: Rgb, tolerance = 12): boolean {
  return actual.every((value, i) => Math.abs(value - (expected[i] ?? 0)) <= tolerance);
}
