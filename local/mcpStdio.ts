/**
 * `npm run --silent mcp`: the MCP server over stdio, for agent clients that only start local commands. It forwards
 * every tool listing and call to the service's own MCP endpoint (`SCREENSHOT_API_URL` + /mcp) with the API key in
 * `SCREENSHOT_API_KEY`, so the tools, their schemas, the checks and the costs are the service's, never a copy.
 * stdout carries the protocol only; anything for a person goes to stderr.
 *
 * Each message is one POST of its own, as the endpoint is stateless, tied to the request it answers: when the agent
 * cancels a call (or closes the bridge), that POST is abandoned, and the service sees the client hang up and gives
 * the credits back, as for any answer that never reached its client. No timeout of ours cuts a call short: the
 * service ends every capture within its own time budget (docs/api.md 7.6).
 */
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  type JSONRPCRequest,
  LATEST_PROTOCOL_VERSION,
  ListToolsRequestSchema,
  type ListToolsResult,
} from '@modelcontextprotocol/sdk/types.js';
import { setArgumentsAside } from '../shared/mcp/argumentsAside';
import { MCP_SERVER_INFO } from '../shared/mcp/mcpRoute';
import { protocolError } from '../shared/mcp/protocolError';
import { mcpEndpoint } from './mcpEndpoint';

function setting(name: string): string {
  const value = process.env[name];
  if (value) return value;
  process.stderr.write(
    `${name} is not set. Run with SCREENSHOT_API_URL (e.g. http://127.0.0.1:3000) and SCREENSHOT_API_KEY (sk_live_…).\n`,
  );
  process.exit(2);
}

const endpoint = mcpEndpoint(setting('SCREENSHOT_API_URL'));
const apiKey = setting('SCREENSHOT_API_KEY');

/** One JSON-RPC request to the service, abandoned when `signal` aborts; its result, or its error as the agent's. */
async function forward(method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': LATEST_PROTOCOL_VERSION,
    },
    // An id of its own for each call: the service takes a cancellation for every running call of the account with
    // the id it names, and other clients of the same key number their calls from the same start (red team).
    body: JSON.stringify({ jsonrpc: '2.0', id: `bridge-${randomUUID()}`, method, params }),
    signal,
  });
  const text = await response.text();
  const answer = parsed(text);
  const error = answer?.error;
  if (error !== null && typeof error === 'object') {
    const { code, message, data } = error as { code: number; message: string; data?: unknown };
    throw protocolError(code, String(message), data);
  }
  if (response.ok && answer && 'result' in answer) return answer.result;
  // The endpoint's own refusals before the protocol (401 for the key, 429 of the stage) are REST errors.
  const reason = typeof error === 'string' ? error : String(answer?.message ?? text.slice(0, 200));
  throw protocolError(ErrorCode.InternalError, `${endpoint.href} answered ${response.status}: ${reason}`);
}

function parsed(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const server = new Server(MCP_SERVER_INFO, { capabilities: { tools: {} } });
/**
 * Where a call carries its params as the agent sent them, past the bridge's SDK: the SDK sees the call with its
 * arguments set aside (as the endpoint's does), for its own parse answers arguments that are no object, or a call
 * without a tool name, with an internal error and its validator's dump, where the service refuses them as documented
 * (red team, round 30). The service checks what it is forwarded. Carried in the message itself, not kept by its id:
 * a call the SDK refused before its handler left its params to the next call with that id (review, session 31).
 */
const SENT_PARAMS = 'screenshot-service/sent-params';
server.setRequestHandler(
  ListToolsRequestSchema,
  async (request, extra) => (await forward('tools/list', request.params, extra.signal)) as ListToolsResult,
);
server.setRequestHandler(
  CallToolRequestSchema,
  async (request, extra) =>
    (await forward('tools/call', request.params._meta?.[SENT_PARAMS], extra.signal)) as CallToolResult,
);
const transport = new StdioServerTransport();
await server.connect(transport);
const deliver = transport.onmessage;
transport.onmessage = (message) => {
  const { message: handedOver } = setArgumentsAside(message);
  if (handedOver === message) return deliver?.(message);
  const call = handedOver as JSONRPCRequest;
  const sent = (message as JSONRPCRequest).params;
  deliver?.({ ...call, params: { ...call.params, _meta: { [SENT_PARAMS]: sent } } });
};
