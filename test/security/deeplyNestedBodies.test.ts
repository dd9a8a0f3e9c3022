import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * Red team (round 11c): a body nested a few thousand levels deep. JSON.parse takes it (V8 parses iteratively), but
 * JSON.stringify recurses and throws `RangeError: Maximum call stack size exceeded` from about 5,000 levels. Two
 * places stringify a body the caller chose before any schema looked at it:
 *
 * - an async capture sent with an `Idempotency-Key`: Powertools hashes the parsed body (payloadValidationJmesPath
 *   `body`, shared/http/idempotentRoute.ts) before the route runs. The same body without the header is `400
 *   unrecognized_keys`; with it, `500 Internal server error`, after about 3.5 s of "removal" retries of a record
 *   that was never written, and an ERROR line "its key answers 409 for a day" that is not even true;
 * - a batch: each request's size is measured with `JSON.stringify(request)` (shared/jobs/submitBatch.ts,
 *   parseBatch) before `screenshotRequest` validates it.
 *
 * Either is a 500 counted as ours (the 5xx alarms page the operators and roll deploys back), at will, for any
 * holder of an API key, 40 KB of brackets, and free: nothing is charged, and the keyed one is not even counted in
 * the rate window. docs/api.md 4.2: a body problem is a 400 with its details.
 *
 * Fixed: shared/http/idempotentRoute.ts keeps such a body as its text for Powertools' hash; shared/jobs/submitBatch.ts
 * measures a request once its fields hold.
 *
 * Red team (round 12b): Powertools also sorts the body's keys before it hashes them (`deepSort`, recursive JavaScript),
 * which runs out of stack at about 2,000 levels of objects, where JSON.stringify still writes 4,000: a body of objects
 * 3,000 deep passed the first fix and was a 500 again. Fixed: a body nested more than 64 levels (walked without
 * recursion) is kept as its text.
 */

let service: TestLocalService;

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '10', POWERTOOLS_METRICS_DISABLED: 'true' });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
/** Objects nested `depth` levels: JSON.stringify writes them, Powertools' deepSort does not. */
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

async function post(path: string, apiKey: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${service.url}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('a deeply nested body', () => {
  it('is a 400 for an async capture sent with an Idempotency-Key, as it is without one', async () => {
    const account = await service.newAccount();
    const body = `{"async":true,"html":"<p>a</p>","extra":${nested(20_000)}}`;
    const unkeyed = await post('/api/screenshot', account.apiKey, body);
    expect(unkeyed.status).toBe(400);
    const keyed = await post('/api/screenshot', account.apiKey, body, { 'Idempotency-Key': 'nightly-1' });
    // Before the fix: 500 {"error":"Internal server error"}.
    expect({ status: keyed.status, error: keyed.body.error }).toEqual({
      status: 400,
      error: 'Invalid request body',
    });
  }, 60_000);

  it('is a 400 naming the request in a batch', async () => {
    const account = await service.newAccount();
    const body = `{"requests":[{"html":"<p>a</p>","extra":${nested(20_000)}}]}`;
    const answer = await post('/api/batches', account.apiKey, body);
    // Before the fix: 500 {"error":"Internal server error"}.
    expect({ status: answer.status, error: answer.body.error }).toEqual({
      status: 400,
      error: 'Invalid request body',
    });
    expect(await service.balance(account.token)).toBe(10);
  }, 60_000);

  it('is a 400 for an async capture or a batch with an Idempotency-Key when it nests objects', async () => {
    const account = await service.newAccount();
    const extra = nestedObjects(3_000);
    expect(() => JSON.stringify(JSON.parse(extra))).not.toThrow();
    for (const [path, body] of [
      ['/api/screenshot', `{"async":true,"html":"<p>a</p>","extra":${extra}}`],
      ['/api/batches', `{"requests":[{"html":"<p>a</p>","extra":${extra}}]}`],
    ] as const) {
      const keyed = await post(path, account.apiKey, body, {
        'Idempotency-Key': `nested-objects-${path.length}`,
      });
      expect({ path, status: keyed.status, error: keyed.body.error }).toEqual({
        path,
        status: 400,
        error: 'Invalid request body',
      });
    }
    expect(await service.balance(account.token)).toBe(10);
  }, 60_000);
});
