import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { HttpRequest } from '../../shared/http/types';

/** POST /mcp carrying `messages` (one JSON-RPC message, or a batch of them) with `apiKey`. */
export function mcpPost(apiKey: string, messages: unknown): HttpRequest {
  return {
    method: 'POST',
    path: '/mcp',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    pathParameters: {},
    query: {},
    body: JSON.stringify(messages),
    requestId: 'r',
    baseUrl: 'https://api.test',
    deadline: Date.now() + 90_000,
    signal: new AbortController().signal,
  };
}

/** POST /mcp, as mcpPost builds it, to the running service at `url`. */
export function fetchMcp(url: string, apiKey: string, messages: unknown): Promise<Response> {
  const { headers, body } = mcpPost(apiKey, messages);
  return fetch(`${url}/mcp`, { method: 'POST', headers, body });
}

/** One tools/call message (id `id`). */
export function toolCall(call: { name: string; arguments: Record<string, unknown> }, id = 1) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: call };
}

/** The SDK's client on `npm run mcp`, forwarding to the service at `apiUrl` (SCREENSHOT_API_URL) with `apiKey`. */
export async function mcpStdioClient(apiUrl: string, apiKey: string): Promise<Client> {
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: 'npm',
      args: ['run', '--silent', 'mcp'],
      env: {
        ...(process.env as Record<string, string>),
        SCREENSHOT_API_URL: apiUrl,
        SCREENSHOT_API_KEY: apiKey,
      },
      stderr: 'pipe',
    }),
  );
  return client;
}
