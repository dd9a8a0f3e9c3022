import { describe, expect, it } from 'vitest';
import { routeEvent } from '../../local/apiGatewayEvent';
import { invocationContext } from '../../local/invocationContext';
import { admissionOverPorts } from '../../shared/accounts/admissionRound';
import { bufferedHandler } from '../../shared/http/adapter/apiGateway';
import { jobRoutes, MAX_BATCH_BODY_BYTES } from '../../shared/http/jobRoutes';
import { submitBatch } from '../../shared/jobs/submitBatch';
import { InMemoryServiceMetrics } from '../helpers/inMemoryMetrics';
import {
  fakeSessions,
  fakeUrlPolicy,
  MemoryCaptureSlots,
  MemoryPendingRefunds,
  MemoryRateLimiter,
} from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';
import { proxyHeaders } from '../helpers/proxyHeaders';

/**
 * Red team (round 11, batches): POST /api/batches answers a 400 with every problem at once, one detail per refused
 * header, and each detail repeats the header's name three times beside a 120-character message. A body within the
 * batch's 1 MiB of one request whose `headers` name 68,000 `proxy-*` headers with empty values (about 15 bytes each)
 * is answered with 15.5 MB of details (measured on `npm start`): fifteen times the request. Deployed the batch
 * function is buffered, and Lambda answers at most 6 MB: the refusal becomes a failed invocation, a 5xx counted as
 * ours (the 5xx alarms, a deploy's rollback), for any account, free, once per request the rate limit allows (it
 * counts one). The MCP route had the same amplification and caps its refusal text (test/mcp/errorTextSize.test.ts);
 * the REST batch route does not.
 *
 * Fixed: shared/screenshot/optionFields.ts checks no header of a `headers` object over its 20 entries.
 */

/** Lambda's limit for a synchronous invocation's answer (API Gateway's buffered routes). */
const LAMBDA_ANSWER_BYTES = 6 * 1024 * 1024;

/** Headers whose values are numbers, not strings: each entry about 9 bytes of the body. */
function numericHeaders(bytes: number): Record<string, number> {
  const headers: Record<string, number> = {};
  let size = 0;
  for (let n = 0; size < bytes; n++) {
    const name = `h${n.toString(36)}`;
    headers[name] = 0;
    size += name.length + 5;
  }
  return headers;
}

/** POST /api/batches through the buffered Lambda adapter, one request with `headers`, within the batch's 1 MiB. */
async function refusedBatch(headers: Record<string, unknown>) {
  const now = () => Date.now();
  const service = memoryScreenshotService({ now });
  const { key } = await service.addKey('acct-headers', now());
  const routes = jobRoutes({
    keys: service.keys,
    jobs: {} as never,
    images: {} as never,
    sessions: fakeSessions,
    submitBatch: submitBatch({
      keys: service.keys,
      credits: service.credits,
      admissions: admissionOverPorts({
        keys: service.keys,
        credits: service.credits,
        rateLimiter: new MemoryRateLimiter(100),
        signedLinkBudget: new MemoryRateLimiter(100),
        captureSlots: new MemoryCaptureSlots(10),
      }),
      urlPolicy: fakeUrlPolicy,
      acceptJobs: async () => {
        throw new Error('an invalid batch accepts nothing');
      },
      pendingRefunds: new MemoryPendingRefunds(),
      metrics: new InMemoryServiceMetrics(),
      now,
    }),
    now,
  });
  const body = JSON.stringify({ requests: [{ url: 'https://example.com/', headers }] });
  expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_BATCH_BODY_BYTES);
  return bufferedHandler(routes.createBatch, { errors: 'screenshot' })(
    routeEvent('createBatch', { bearer: key, body }),
    invocationContext(),
  );
}

describe('a batch refused for a great many headers', () => {
  it('is answered with what Lambda can return, not a refusal fifteen times its body', async () => {
    const answer = await refusedBatch(proxyHeaders(MAX_BATCH_BODY_BYTES - 1024));
    expect(answer.statusCode).toBe(400);
    // Before: 15.5 MB of details for a 1 MiB body, which Lambda cannot return.
    expect(Buffer.byteLength(JSON.stringify(answer))).toBeLessThanOrEqual(LAMBDA_ANSWER_BYTES);
  }, 60_000);

  /**
   * Red team 12b (batches): round 11 stopped a `headers` object over its 20 entries from naming each of its headers
   * (68,000 refused names made a 17 MB answer). The bound sits in the record's `.check`, which looks at entries only
   * once every value parsed as a string: values that are no string (`0`) are each refused by `z.record` itself first,
   * one detail per entry (`invalid_type`, `path` `["requests", 0, "headers", "h1a2"]`, `field` the same again, and
   * "Invalid input: expected string, received number"). A body within the batch's 1 MiB of one request whose headers
   * are 90,000 numbers is answered with about 15 MB of details, more than Lambda returns (6 MB): a 5xx counted as
   * ours, for any account, free, one request of the window per try. The per-request 96 KiB bound comes after the
   * schema, so it does not stop it either.
   *
   * Fixed: shared/errors.ts answers the first MAX_ANSWERED_DETAILS (1,000) details of a 400, then one that counts the
   * rest.
   */
  it('is answered with what Lambda can return when the values are no strings, not one detail per entry', async () => {
    const answer = await refusedBatch(numericHeaders(MAX_BATCH_BODY_BYTES - 1024));
    expect(answer.statusCode).toBe(400);
    expect(Buffer.byteLength(JSON.stringify(answer))).toBeLessThanOrEqual(LAMBDA_ANSWER_BYTES);
  }, 60_000);
});
