import type { HttpRequest } from '../../shared/http/types';

/** POST /mcp carrying `calls` as one JSON-RPC batch of tools/call messages (ids 0, 1, …) of `apiKey`. */
export function toolCalls(
  apiKey: string,
  calls: { name: string; arguments: Record<string, unknown> }[],
): HttpRequest {
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
    body: JSON.stringify(calls.map((params, id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params }))),
    requestId: 'r',
    baseUrl: 'https://api.test',
    deadline: Date.now() + 90_000,
    signal: new AbortController().signal,
  };
}
