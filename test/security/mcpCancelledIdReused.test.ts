import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { articleService } from '../helpers/articleService';

/**
 * Red team (round 5): a cancellation is kept ten minutes under the account and the JSON-RPC id alone. JSON-RPC ids
 * are unique only within one client's session: every SDK client numbers its requests from 0 (initialize is 0, the
 * first call 1). A second agent of the same account (another Claude Desktop, a restarted one, a CI job) reuses the
 * ids of the first, so the first one's cancelled call makes the second one's call with that id answer "The call was
 * cancelled" for ten minutes: its capture runs, and its result is thrown away. The same holds for a cancellation
 * sent before its call (nothing was running yet). And the stdio bridge (`npm run mcp`, local/mcpStdio.ts) sends every
 * call it forwards with id 1: one cancelled first call of any HTTP client of the account cancels every call of the
 * account's Claude Desktop / Cursor through the bridge for ten minutes.
 */

const local = articleService();
const { balance } = local;

async function agent(apiKey: string): Promise<Client> {
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${local.service.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
    }),
  );
  return client;
}

describe("another session's call with the id of a cancelled one", () => {
  it('is answered, not cancelled', { timeout: 120_000 }, async () => {
    const { apiKey, token } = await local.service.newAccount();
    const first = await agent(apiKey);
    const cancel = new AbortController();
    const call = first.callTool(
      { name: 'get_page_markdown', arguments: { url: `${local.site.origin}/article`, delay: 3000 } },
      undefined,
      { signal: cancel.signal },
    );
    await vi.waitFor(async () => expect(await balance(token)).toBe(99), { timeout: 10_000 });
    cancel.abort();
    await expect(call).rejects.toThrow();
    await vi.waitFor(async () => expect(await balance(token)).toBe(100), { timeout: 30_000 });
    await first.close();

    // A second agent of the account, right after: its first call has the same id (1).
    const second = await agent(apiKey);
    const result = await second.callTool({
      name: 'get_page_markdown',
      arguments: { url: `${local.site.origin}/article` },
    });
    await second.close();

    // A call through the stdio bridge, as it forwards every one (id 1, a POST of its own).
    const bridged = await fetch(`${local.service.url}/mcp`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${apiKey}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': LATEST_PROTOCOL_VERSION,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_page_markdown', arguments: { url: `${local.site.origin}/article` } },
      }),
    });
    const bridgedText = await bridged.text();
    // Today both are answered "The call was cancelled" (their captures ran, and were given back).
    expect({
      secondAgent:
        JSON.stringify(result.content).includes('The call was cancelled') || result.isError === true,
      bridge: bridgedText.includes('The call was cancelled'),
    }).toEqual({ secondAgent: false, bridge: false });
  });
});
