import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it, vi } from 'vitest';
import { articleService } from '../helpers/articleService';

/**
 * Red team (round 4): a call an agent cancels over Streamable HTTP. The SDK's client cancels by sending
 * `notifications/cancelled` in a POST of its own and drops the answer when it comes; it does not abort the call's
 * own POST. POST /mcp is stateless and ignores the notification, so the capture runs on and is charged for an answer
 * the agent threw away. Over stdio (`npm run mcp`) the same cancel is given back (test/mcp/mcp.test.ts).
 */

const local = articleService();
const { balance } = local;

describe('a call the agent cancels over Streamable HTTP', () => {
  it('is given back, as over stdio', { timeout: 120_000 }, async () => {
    const { apiKey, token } = await local.service.newAccount();
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${local.service.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
      }),
    );
    const cancel = new AbortController();
    const call = client.callTool(
      { name: 'get_page_markdown', arguments: { url: `${local.site.origin}/article`, delay: 6000 } },
      undefined,
      { signal: cancel.signal },
    );
    // Charged while it runs, then cancelled by the agent.
    await vi.waitFor(async () => expect(await balance(token)).toBe(99), { timeout: 10_000 });
    cancel.abort();
    await expect(call).rejects.toThrow();
    // Past the end of the capture (its delay and load), whatever the server did with the cancel.
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    expect(await balance(token)).toBe(100);
    await client.close();
  });
});
