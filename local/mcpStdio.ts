/**
 * `npm run --silent mcp`: the MCP server over stdio, for agent clients that only start local commands. It forwards
 * every tool listing and call to the service's own MCP endpoint (`SCREENSHOT_API_URL` + /mcp) with the API key in
 * `SCREENSHOT_API_KEY`, so the tools, their schemas, the checks and the costs are the service's, never a copy.
 * stdout carries the protocol only; anything for a person goes to stderr.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { MCP_SERVER_INFO } from '../shared/mcp/mcpRoute';

function setting(name: string): string {
  const value = process.env[name];
  if (value) return value;
  process.stderr.write(
    `${name} is not set. Run with SCREENSHOT_API_URL (e.g. http://127.0.0.1:3000) and SCREENSHOT_API_KEY (sk_live_…).\n`,
  );
  process.exit(2);
}

const endpoint = new URL('/mcp', setting('SCREENSHOT_API_URL'));
const apiKey = setting('SCREENSHOT_API_KEY');

const remote = new Client({ name: `${MCP_SERVER_INFO.name}-stdio`, version: MCP_SERVER_INFO.version });
await remote.connect(
  new StreamableHTTPClientTransport(endpoint, {
    requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
  }),
);

const server = new Server(MCP_SERVER_INFO, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, (request) => remote.listTools(request.params));
server.setRequestHandler(CallToolRequestSchema, (request) => remote.callTool(request.params));
await server.connect(new StdioServerTransport());
