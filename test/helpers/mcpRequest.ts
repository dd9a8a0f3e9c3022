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

/** One tools/call message (id `id`). */
export function toolCall(call: { name: string; arguments: Record<string, unknown> }, id = 1) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: call };
}
