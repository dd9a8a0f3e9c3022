import type { Renderer } from '../../shared/capture/renderer';
import type { ImageStore } from '../../shared/delivery/imageStore';
import { keyManagement } from '../../shared/keys/keyManagement';
import type { Admission } from '../../shared/screenshot/admission';
import {
  captureScreenshot,
  type ScreenshotDeps,
  type ScreenshotInput,
} from '../../shared/screenshot/captureScreenshot';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { requestFromQuery } from '../../shared/signing/queryRequest';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { DeferredUsageRecorder } from '../../shared/usage/usageRecorder';
import {
  FakeRenderer,
  fakeSessions,
  MemoryCancelledCalls,
  MemoryCreditLedger,
  MemoryKeyStore,
  MemoryRateLimiter,
  MemoryUsageStore,
  memoryScreenshotDeps,
} from './memoryPorts';

/** The screenshot use case over fresh in-memory ports (test/helpers/memoryPorts.ts), for the rule tests. */
export function memoryScreenshotService<R extends Renderer = FakeRenderer>(options: {
  now: () => number;
  rateLimit?: number;
  /** Another renderer than the fake (e.g. one invoked through the local Lambda API). */
  renderer?: R;
  /** Another image store than the one in memory (e.g. the local S3 API's). */
  images?: ImageStore;
  /** Where captures wait for their turn (e.g. the local queue); by default they run at once. */
  admission?: Admission;
  /** Where requests wait to be validated and looked up in the cache (the local server's second queue). */
  lookups?: Admission;
}) {
  const keys = new MemoryKeyStore();
  const credits = new MemoryCreditLedger();
  const renderer = (options.renderer ?? new FakeRenderer()) as R;
  const usageStore = new MemoryUsageStore();
  const usage = new DeferredUsageRecorder(usageStore);
  const deps: ScreenshotDeps = memoryScreenshotDeps({
    keys,
    credits,
    renderer,
    usage,
    rateLimiter: new MemoryRateLimiter(options.rateLimit ?? 100),
    signedLinkBudget: new MemoryRateLimiter(options.rateLimit ?? 100),
    now: options.now,
    ...(options.images ? { images: options.images } : {}),
    ...(options.admission ? { admission: options.admission } : {}),
    ...(options.lookups ? { lookups: options.lookups } : {}),
  });
  const manage = (now: () => number) =>
    keyManagement({ sessions: fakeSessions, keys, credits, cipher: deps.cipher, freeCredits: 0, now });
  return {
    keys,
    credits,
    renderer,
    usageStore,
    usage,
    cancelledCalls: new MemoryCancelledCalls(),
    capture: captureScreenshot(deps),
    /** The key-management use case over the same ports, on the service's clock. */
    keyManagement: manage(options.now),
    /** A new API key of the account, created at `createdAt` through the key-management use case: its value, id and signing secret. */
    async addKey(
      accountId: string,
      createdAt: number,
      name = 'k',
    ): Promise<{ key: string; id: string; signingSecret: string }> {
      const { key, id, signingSecret } = await manage(() => createdAt).createKey(
        `session:${accountId}`,
        () => ({
          name,
        }),
      );
      return { key, id, signingSecret };
    },
  };
}

/** A signed link's query: `options` and the key's id, signed with its secret. */
export function signedQuery(
  key: { id: string; signingSecret: string },
  options: Record<string, string>,
): Record<string, string> {
  const signed = { keyId: key.id, ...options };
  return { ...signed, signature: signQuery(key.signingSecret, canonicalQuery(signed)) };
}

/** What the signed GET route hands the use case for `query` (keyId and signature included). */
export function signedLinkInput(
  query: Record<string, string>,
  deadline: number,
  ifNoneMatch?: string,
): ScreenshotInput {
  const { keyId = '', signature = '', ...options } = query;
  return {
    signed: { keyId, signature, canonicalQuery: canonicalQuery(query) },
    request: () => requestFromQuery(screenshotRequest, options),
    deadline,
    ...(ifNoneMatch === undefined ? {} : { ifNoneMatch }),
  };
}
