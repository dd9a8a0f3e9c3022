import { describe, expect, it } from 'vitest';
import { mcpRoute } from '../../shared/mcp/mcpRoute';
import { MAX_HTML_BODY_BYTES } from '../../shared/screenshot/bodySize';
import { mcpPost } from '../helpers/mcpRequest';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';
import { proxyHeaders } from '../helpers/proxyHeaders';

/**
 * Red team (round 11, MCP): POST /api/screenshot reads at most 1 MiB + 96 KiB of body (`413` past it, before any
 * field is looked at), and POST /api/batches 1 MiB. POST /mcp has no bound of its own: only the local server's cap
 * before any handler holds it. Deployed, the web ACL refuses a declared Content-Length above 1 MiB + 96 KiB and
 * counts on the handler for the rest ("A body sent without a length is still capped by API Gateway (10 MB) and
 * refused by the handler with 413", infra/webAcl.ts): a chunked POST /mcp reaches the MCP function whole, up to 10
 * MB. The tool's arguments are validated inside the screenshot use case, before its rate limit (validation first,
 * then one admission round): a `take_screenshot` whose `headers` name 680,000 `proxy-*` headers in 9.5 MB took 6.0 s
 * of one core, the event loop blocked, and about 400 MB, for an account whose rate window is spent (refused 429 all
 * the same, free, as often as it likes), each such request holding an MCP function (which has no reserved
 * concurrency: it draws on the pool the key, credit and job routes share). The REST routes would have answered `413`
 * at once.
 *
 * Fixed: shared/mcp/mcpRoute.ts refuses a body over the screenshot route's bound with `413` once the key is known.
 */

const BODY_BYTES = 2 * 1024 * 1024;

describe('a tools/call larger than any screenshot body the REST route reads', () => {
  it('is refused for its size before its arguments are looked at', async () => {
    const service = memoryScreenshotService({ now: () => Date.now(), rateLimit: 0 });
    const { key } = await service.addKey('acct-spent', Date.now());
    const route = mcpRoute({ ...service });
    const request = mcpPost(key, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'take_screenshot',
        arguments: { url: 'https://a.test/', headers: proxyHeaders(BODY_BYTES) },
      },
    });
    expect(Buffer.byteLength(request.body)).toBeGreaterThan(MAX_HTML_BODY_BYTES);

    // Before: 200 with an isError result, after the use case had validated every one of the headers. The adapter
    // answers what the route throws, as for a missing key.
    await expect(route(request)).rejects.toMatchObject({ status: 413 });
  }, 60_000);
});
