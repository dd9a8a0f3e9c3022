import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SCREENSHOT_BODY_BYTES } from '../../shared/screenshot/bodySize';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * Red team 12b (batches): docs/api.md 19.4 holds each request of a batch "to the bound of one capture's body: 96 KiB
 * (98,304 bytes) as JSON". shared/jobs/submitBatch.ts measures not the request as sent but the schema's output, with
 * every default filled in (width, height, format, quality, cacheTtl, waitUntil, … about 290 bytes). A request of
 * 98,200 bytes, which POST /api/screenshot takes as one capture's body, is refused in a batch as `too_big`, its
 * message saying "at most 98304 bytes as JSON, as the body of one capture".
 *
 * Fixed: shared/jobs/submitBatch.ts measures the request as sent, once its fields hold.
 */

let service: TestLocalService;

beforeAll(async () => {
  service = await startTestLocalService();
});

afterAll(async () => {
  await service?.close();
});

/** A screenshot body of exactly `bytes` bytes as JSON, every field within its own bound. */
function requestOf(bytes: number, extra: Record<string, unknown> = {}) {
  const base = {
    url: 'https://example.com/',
    ...extra,
    css: 'b'.repeat(32_700),
    js: 'a'.repeat(32_700),
    headers: Object.fromEntries(Array.from({ length: 20 }, (_, index) => [`x-h${index}`, 'h'.repeat(1_024)])),
    hideSelectors: [] as string[],
  };
  let left = bytes - Buffer.byteLength(JSON.stringify(base));
  while (left > 0) {
    // Each selector adds its length and 3 bytes (quotes, comma), the first 2.
    const extraBytes = base.hideSelectors.length === 0 ? 2 : 3;
    const length = Math.min(256, left - extraBytes);
    base.hideSelectors.push(`.${'s'.repeat(length - 1)}`);
    left = bytes - Buffer.byteLength(JSON.stringify(base));
  }
  expect(Buffer.byteLength(JSON.stringify(base))).toBe(bytes);
  return base;
}

describe("a batch's request within one capture's body bound as sent", () => {
  it('is taken by POST /api/screenshot as a body, and not refused as too_big in a batch', async () => {
    const { apiKey } = await service.newAccount();
    const bytes = MAX_SCREENSHOT_BODY_BYTES - 100;

    // As one capture's body (async, so nothing is rendered now).
    const single = await service.request('/api/screenshot', {
      bearer: apiKey,
      body: requestOf(bytes - Buffer.byteLength(',"async":true'), { async: true }),
    });
    await single.body?.cancel();
    // Accepted: the body is within one capture's bound.
    expect(single.status).toBe(202);

    const response = await service.request('/api/batches', {
      bearer: apiKey,
      body: { requests: [requestOf(bytes)] },
    });
    const answer = (await response.json()) as { details?: { code: string; path: unknown[] }[] };
    const tooBig = (answer.details ?? []).filter((detail) => detail.code === 'too_big');
    expect({ status: response.status, tooBig }).toMatchObject({ tooBig: [] });
  }, 60_000);
});
