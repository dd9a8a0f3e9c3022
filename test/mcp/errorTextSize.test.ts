import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { fetchMcp, toolCall } from '../helpers/mcpRequest';

/**
 * Red team (round 10, fixed): round 9 bounded the one MCP answer it looked at (get_page_markdown's text, measured as JSON:
 * exceedsAsJsonString). A tool call's refusal has no bound at all: errorText (shared/mcp/mcpRoute.ts) writes one line per
 * validation detail, and the `headers` check (shared/screenshot/optionFields.ts) makes one detail per entry, however
 * many entries past the 20 allowed, each naming the entry and repeating a 100-byte explanation. A tool call's
 * arguments are not held to the screenshot route's 96 KiB either (a REST body without `html` over 96 KiB is `413`):
 * only the local port's 1 MiB + 96 KiB cap applies. So one `tools/call` of 912 KB, `headers` of 60,000
 * `proxy-*` names, is answered with 8 MB of text (measured: 912 KB in, 8.06 MB out), every byte of it built in the front's memory several times over (the detail objects, the text, the
 * JSON-RPC object, its JSON, the Response), on as many calls at once as the rate limit lets through.
 *
 * Fix: cap the details a refusal carries (REST and MCP: the first N, and "and K more"), or refuse a record over its
 * 20 entries before checking each; and hold a tool call's arguments to the REST body limit of the route it stands for.
 */

let service: TestLocalService;

beforeAll(async () => {
  service = await startTestLocalService();
}, 120_000);

afterAll(async () => {
  await service?.close();
});

describe('an MCP tool call refused for its arguments', () => {
  it('is not answered with more than it sent', async () => {
    const { apiKey } = await service.newAccount();
    const headers = Object.fromEntries(
      Array.from({ length: 60_000 }, (_, i) => [`proxy-${i.toString(36)}`, '']),
    );
    const call = toolCall({ name: 'take_screenshot', arguments: { url: 'https://example.com', headers } });
    const body = JSON.stringify(call);
    const response = await fetchMcp(service.url, apiKey, call);
    const answer = await response.text();
    expect(response.status).toBe(200);
    expect(answer).toContain('"isError":true');
    expect(Buffer.byteLength(body)).toBeLessThan(1_146_880);
    // Today: 8.8x the request (912 KB in, 8.06 MB out).
    expect(Buffer.byteLength(answer)).toBeLessThanOrEqual(Buffer.byteLength(body));
  }, 60_000);
});
