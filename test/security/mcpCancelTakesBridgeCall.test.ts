import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { articleService } from '../helpers/articleService';
import { mcpStdioClient } from '../helpers/mcpRequest';

/**
 * Red team (round 7): since 207f239 a cancellation takes the account's calls of that JSON-RPC id that are running
 * when it comes. The stdio bridge (`npm run mcp`, local/mcpStdio.ts) still sends every call it forwards as id 1.
 * JSON-RPC ids are each client's own numbering: any other client of the account (a script, another agent, a CI job)
 * that cancels its call numbered 1 throws away every call the bridge has running at that moment: their captures
 * run, are given back, and the bridge's agent is answered "The call was cancelled" for a call it never cancelled.
 * The bridge making its ids unique (a random id per forwarded call) takes it out of every other client's numbering.
 */

const local = articleService();
const { balance } = local;

describe("an agent's cancellation of its first call", () => {
  it('leaves the call the stdio bridge has running at the same time', { timeout: 120_000 }, async () => {
    const { apiKey, token } = await local.service.newAccount();
    const post = (message: unknown, signal?: AbortSignal) =>
      fetch(`${local.service.url}/mcp`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${apiKey}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': LATEST_PROTOCOL_VERSION,
        },
        body: JSON.stringify(message),
        ...(signal ? { signal } : {}),
      });
    const call = (id: number, signal?: AbortSignal) =>
      post(
        {
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: {
            name: 'get_page_markdown',
            arguments: { url: `${local.site.origin}/article`, delay: 3000 },
          },
        },
        signal,
      );
    // A call through the bridge (npm run mcp), which forwards each call as a POST of its own.
    const bridge = await mcpStdioClient(local.service.url, apiKey);
    const bridged = bridge
      .callTool({
        name: 'get_page_markdown',
        arguments: { url: `${local.site.origin}/article`, delay: 3000 },
      })
      .then((result) => JSON.stringify(result));
    // The other agent's first call (id 1), which it then cancels, as the SDK does: notifications/cancelled.
    const cancel = new AbortController();
    const others = call(1, cancel.signal).catch(() => undefined);
    // Both admitted (and charged) before the other agent changes its mind.
    await vi.waitFor(async () => expect(await balance(token)).toBe(98), { timeout: 20_000 });
    const cancelled = await post({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 1, reason: 'The user changed their mind' },
    });
    expect(cancelled.status).toBe(202);
    cancel.abort();
    await others;
    const text = await bridged;
    // Today: {"result":{"isError":true,"content":[{"type":"text","text":"The call was cancelled"}]}, ...}
    await bridge.close();
    expect(text).not.toContain('The call was cancelled');
    expect(text).toContain('Tides');
  });
});
