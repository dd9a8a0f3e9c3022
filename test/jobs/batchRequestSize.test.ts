import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BATCH_BODY_BYTES } from '../../shared/http/jobRoutes';
import { MAX_SCREENSHOT_BODY_BYTES } from '../../shared/screenshot/bodySize';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * Red team (round 11, batches): a batch's request is held to the schema's field bounds and the batch body's 1 MiB,
 * never to the 96 KiB of one screenshot body without html. One request of a batch within every documented bound
 * (50 cookies of 4,096 characters with their paths, 20 headers of 1,024, css and js of 32 KiB: about 340 KB) is
 * sealed (headers and cookies, base64) into a job request item over DynamoDB's 400 KB: the write is refused with a
 * ValidationException and the batch is answered `500 Internal server error`, counted as our fault (5xx alarms, a
 * deploy's rollback), at will and for free (its credits go back). docs/api.md 19.4 and 13 give a batch `202`, `400`,
 * `402`, `413`, `429` or `503`, never 500.
 *
 * Fixed: shared/jobs/submitBatch.ts holds each request to one capture's body bound (`400` naming `requests[i]`).
 */

let service: TestLocalService;

beforeAll(async () => {
  service = await startTestLocalService();
});

afterAll(async () => {
  await service?.close();
});

/** One screenshot body, every field within its documented bound (docs/api.md, "Limits"). */
function largestUrlRequest() {
  return {
    url: 'https://example.com/',
    cookies: Array.from({ length: 50 }, (_, index) => ({
      name: `c${index}`,
      value: 'v'.repeat(4_090),
      path: `/${'p'.repeat(1_000)}`,
    })),
    headers: Object.fromEntries(Array.from({ length: 20 }, (_, index) => [`x-h${index}`, 'h'.repeat(1_024)])),
    js: 'a'.repeat(32 * 1024 - 16),
    css: 'b'.repeat(32 * 1024 - 16),
  };
}

describe('a batch whose one request is within every field bound but large', () => {
  it('is answered as documented (accepted, or refused 400/413), never 500, and charges nothing when refused', async () => {
    const { apiKey, token } = await service.newAccount();
    const body = { requests: [largestUrlRequest()] };
    const bytes = Buffer.byteLength(JSON.stringify(body));
    // Over one screenshot body's bound, well within the batch's.
    expect(bytes).toBeGreaterThan(MAX_SCREENSHOT_BODY_BYTES);
    expect(bytes).toBeLessThan(MAX_BATCH_BODY_BYTES);
    const before = await service.balance(token);

    const response = await service.request('/api/batches', { bearer: apiKey, body });
    const answer = (await response.json()) as Record<string, unknown>;

    expect({ status: response.status, answer }).not.toMatchObject({ status: 500 });
    expect([202, 400, 413]).toContain(response.status);
    if (response.status !== 202) expect(await service.balance(token)).toBe(before);
  }, 60_000);
});

describe('a queued html document at its bound beside a script of 32 KiB of control characters', () => {
  // Review (session 31): sealing the script of an html request (6 bytes a control character as JSON, then base64)
  // put its job request item over DynamoDB's 400 KB: `500`, at will. An html request is kept as sent.
  it('is accepted', async () => {
    const { apiKey } = await service.newAccount();
    const html = `<p>${'x'.repeat(256 * 1024 - 16)}</p>`;
    const js = '\u0001'.repeat(32 * 1024 - 16);
    const response = await service.request('/api/screenshot', {
      bearer: apiKey,
      body: { html, js, async: true },
    });
    expect(response.status).toBe(202);
  }, 60_000);
});
