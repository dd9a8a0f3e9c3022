/**
 * A JSON-RPC error for the MCP SDK to answer with: its `code`, and `message` as the wire's message. Not the SDK's
 * McpError, whose message already begins "MCP error <code>: ", which the client's SDK writes once more: agents read
 * "MCP error -32602: MCP error -32602: Unknown tool" (red team, rounds 27 and 31).
 */
export function protocolError(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code, ...(data === undefined ? {} : { data }) });
}
