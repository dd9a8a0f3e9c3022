import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  CancelledNotificationSchema,
  ErrorCode,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { heightCap, MAX_PDF_PAGES } from '../capture/renderer';
import { PayloadTooLargeError } from '../errors';
import { errorAnswer } from '../http/errorAnswer';
import { bearerCredential } from '../http/request';
import type { HttpRequest, HttpResponse, HttpRoute } from '../http/types';
import { JSON_ESCAPED_LENGTH } from '../jsonEscapes';
import type { KeyStore } from '../keys/keyStore';
import { authenticateApiKey } from '../screenshot/apiKeyAuth';
import { MAX_HTML_BODY_BYTES } from '../screenshot/bodySize';
import type { CaptureScreenshot, Screenshot } from '../screenshot/captureScreenshot';
import { setArgumentsAside } from './argumentsAside';
import { type CancellationMark, type CancelledCalls, cameWhileRunning } from './cancelledCalls';
import { protocolError } from './protocolError';
import {
  isToolName,
  MAX_INLINE_IMAGE_BYTES,
  MAX_INLINE_TEXT_BYTES,
  TOOL_LIST,
  type ToolName,
  toolRequest,
} from './tools';

/**
 * Whether UTF-8 `text` takes more than `limit` bytes as a JSON string's content, as the answer writes it: a control
 * character is six (`\u0001`; two for the five with short escapes), a quote or backslash two. Measured on the bytes,
 * without building the string: a page's Markdown of 8 million U+0001, under the limit as text, was a 48 MB answer (red
 * team). A byte is never written as fewer than one nor more than six, so only a text between those bounds is walked,
 * and only until the limit is passed: the walk runs on the front's event loop, and the whole of a 190 MiB Markdown
 * stalled every account's requests for seconds (red team, round 20).
 */
export function exceedsAsJsonString(text: Buffer, limit: number): boolean {
  if (text.length > limit) return true;
  if (text.length * 6 <= limit) return false;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    // The bytes of a character beyond ASCII are written as they are.
    bytes += JSON_ESCAPED_LENGTH[text[i] as number] ?? 1;
    if (bytes > limit) return true;
  }
  return false;
}

const TEXT_TOO_LARGE =
  `The page's Markdown is larger than ${MAX_INLINE_TEXT_BYTES / 1024 / 1024} MiB, more than a tool answers with; ` +
  'POST /api/screenshot with format "markdown" returns it';

/**
 * A JSON-RPC batch is refused before any of its messages is read (MCP 2025-06-18 has no batches). Its calls would
 * share one answer: a client that hung up after reading the first results (the links of a PDF and an image at the
 * start of a Markdown padded to megabytes) would keep them, and have every call given back as undelivered. And the
 * SDK answers one message per id, so a repeated id would run a capture whose result is never sent.
 */
function batchRefused(): HttpResponse {
  return jsonRpcRefusal(
    ErrorCode.InvalidRequest,
    'JSON-RPC batches are not supported: send one message per request',
  );
}

function jsonRpcRefusal(code: ErrorCode, message: string): HttpResponse {
  return {
    status: 400,
    headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' },
    body: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }),
  };
}

/**
 * The body's JSON-RPC message, read here once and handed to the SDK as read, so that what is refused as a batch is
 * exactly what would run as one: the SDK reads text through a TextDecoder, which drops a leading byte order mark,
 * and a test of the raw text for "[" let `\uFEFF[...]` run as a batch (red team). Undefined: not JSON.
 */
function messageOf(body: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(body.replace(/^\uFEFF/, '')) };
  } catch {
    return undefined;
  }
}

/** The JSON-RPC id a `notifications/cancelled` message names, as text; undefined for any other message. */
function cancelledRequestId(message: unknown): string | undefined {
  const parsed = CancelledNotificationSchema.safeParse(message);
  const id = parsed.success ? parsed.data.params.requestId : undefined;
  return id === undefined ? undefined : String(id);
}

/** The server's name and version, as MCP clients show them. */
export const MCP_SERVER_INFO = { name: 'screenshot-service', version: '1.0.0' } as const;

export interface McpDeps {
  capture: CaptureScreenshot;
  keys: KeyStore;
  cancelledCalls: CancelledCalls;
  /** Reads a stored file through its pre-signed link: images up to 1 MB are handed back inline. */
  download?: (url: string) => Promise<Buffer>;
}

/**
 * POST /mcp: the Model Context Protocol over Streamable HTTP, stateless, answered as JSON (docs/api.md, "MCP"). The
 * API key is checked before the protocol is spoken (401, as the REST route answers); each tool call is then one
 * screenshot request of that key through the same use case, so it is rate-limited, charged, slotted and recorded
 * (marked `via: mcp`) exactly as POST /api/screenshot is.
 */
export function mcpRoute(deps: McpDeps): HttpRoute {
  const download = deps.download ?? fetchBytes;
  return async (request) => {
    const apiKey = bearerCredential(request);
    const { accountId } = await authenticateApiKey(apiKey, deps.keys);
    // As the screenshot route's bound: deployed, a body sent without a length reaches the function whole (up to
    // API Gateway's 10 MB), and its arguments were validated before the rate limit refused it (red team).
    if (Buffer.byteLength(request.body, 'utf8') > MAX_HTML_BODY_BYTES)
      throw new PayloadTooLargeError(MAX_HTML_BODY_BYTES);
    const message = request.method === 'POST' ? messageOf(request.body) : undefined;
    if (request.method === 'POST' && !message)
      return jsonRpcRefusal(ErrorCode.ParseError, 'Parse error: Invalid JSON');
    if (Array.isArray(message?.value)) return batchRefused();
    // The arguments go to the screenshot use case as the caller sent them: it validates them in its order of checks
    // (the rate limit first), as for a REST body. A server that parsed them first would answer a bad one outside both.
    const call = setArgumentsAside(message?.value);
    // JSON that is no JSON-RPC message is an invalid request, not the parse error the SDK would answer (red team,
    // round 30). Judged as the SDK is handed it: a tools/call without a tool name is the call's own -32602. Like the
    // parse error, before the SDK's checks of the request's headers (406, 415).
    if (message && !JSONRPCMessageSchema.safeParse(call.message).success)
      return jsonRpcRefusal(ErrorCode.InvalidRequest, 'Invalid Request: not a JSON-RPC 2.0 message');
    // Kept before the SDK answers the notification (202): the call it names runs on in another request.
    const cancelled = cancelledRequestId(message?.value);
    if (cancelled !== undefined) await deps.cancelledCalls.mark(accountId, cancelled, Date.now());
    const server = new Server(MCP_SERVER_INFO, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOL_LIST }));
    server.setRequestHandler(CallToolRequestSchema, ({ params }, { requestId }) => {
      if (call.malformed)
        throw protocolError(
          ErrorCode.InvalidParams,
          'A tools/call needs params with the tool name as a string',
        );
      if (!isToolName(params.name))
        throw protocolError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
      return callTool(params.name, call.sentArguments, String(requestId));
    });
    // Stateless: a server and a transport per request, nothing kept between them (any instance can answer).
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    // Each charged call's way back, for an answer the client never received (as the REST route gives).
    const charged: (() => Promise<unknown>)[] = [];
    await server.connect(transport);
    try {
      return {
        ...(await httpResponse(
          await transport.handleRequest(webRequest(request), message ? { parsedBody: call.message } : {}),
        )),
        undelivered: async () => {
          await Promise.all(charged.map((giveBack) => giveBack()));
        },
      };
    } finally {
      await server.close();
    }

    async function callTool(name: ToolName, args: unknown, requestId: string): Promise<CallToolResult> {
      // Read before the capture is asked: a cancellation that came while the call's first read was answered, the call
      // already admitted and charged, was taken for one sent ahead of it (red team). One that comes before is.
      const atStart = await deps.cancelledCalls.latest(accountId, requestId).then(
        (mark): { mark: CancellationMark } => ({ mark }),
        () => undefined,
      );
      const outcome = await deps.capture({
        apiKey,
        request: () => toolRequest(name, args),
        deadline: request.deadline,
        signal: request.signal,
        via: 'mcp',
      });
      if (!outcome.ok) {
        return { isError: true, content: [{ type: 'text', text: errorText(outcome.error) }] };
      }
      // The tools' input schemas have no `async`: a tool's answer is its result.
      if (!('screenshot' in outcome)) throw new Error('An MCP tool queued a job');
      // A mark that cannot be read (the table out of reach) is taken as none: the answer is made, and charged.
      const thrownAway =
        atStart !== undefined &&
        cameWhileRunning(
          atStart.mark,
          await deps.cancelledCalls.latest(accountId, requestId).catch(() => atStart.mark),
        );
      // The agent threw this call away (its answer would be dropped): given back, unless its capture was kept in the
      // cache (charged whatever happens to the answer, as for a hang-up), which is then answered after all.
      if (thrownAway && (await outcome.undelivered())) {
        return { isError: true, content: [{ type: 'text', text: 'The call was cancelled' }] };
      }
      const { image } = outcome.screenshot;
      if (image && exceedsAsJsonString(image, MAX_INLINE_TEXT_BYTES)) {
        // Never reaches the client: not charged, as for an answer it never received.
        await outcome.undelivered();
        return { isError: true, content: [{ type: 'text', text: TEXT_TOO_LARGE }] };
      }
      let result: CallToolResult;
      try {
        result = await toolResult(name, outcome.screenshot, download);
      } catch (error) {
        // A result that cannot be made (the stored image unreadable) never reaches the client either.
        await outcome.undelivered();
        throw error;
      }
      charged.push(outcome.undelivered);
      return result;
    }
  };
}

const CUT_IMAGE = `Truncated: the image was cut at the height cap (${heightCap('png').toLocaleString('en-US')} pixels; ${heightCap('webp').toLocaleString('en-US')} for WebP).`;
const CUT_PDF = `Truncated: the document was cut at ${MAX_PDF_PAGES} pages.`;

async function toolResult(
  name: ToolName,
  screenshot: Screenshot,
  download: (url: string) => Promise<Buffer>,
): Promise<CallToolResult> {
  if (name === 'get_page_markdown') {
    return { content: [{ type: 'text', text: screenshot.image?.toString('utf8') ?? '' }] };
  }
  const { link } = screenshot;
  if (!link) throw new Error('A stored answer came back without its link');
  const mimeType = screenshot.contentType;
  // A cut answer says so, as X-Screenshot-Truncated does (red team, round 24: an agent got part of a document silently).
  const cut: CallToolResult['content'] = screenshot.truncated
    ? [{ type: 'text', text: name === 'get_page_pdf' ? CUT_PDF : CUT_IMAGE }]
    : [];
  if (name === 'take_screenshot' && link.bytes <= MAX_INLINE_IMAGE_BYTES) {
    const data = (await download(link.url)).toString('base64');
    return { content: [{ type: 'image', data, mimeType }, ...cut] };
  }
  const expires = new Date(link.expiresAt).toISOString();
  return {
    content: [
      {
        type: 'resource_link',
        uri: link.url,
        name: name === 'get_page_pdf' ? 'page.pdf' : 'screenshot',
        mimeType,
      },
      { type: 'text', text: `${mimeType}, ${link.bytes} bytes, at ${link.url} until ${expires}` },
      ...cut,
    ],
  };
}

/**
 * The REST answer's error with its message (why a capture failed), what its fields and headers tell a client to do
 * next (an agent has no headers: red team, round 27), and for a 400 each detail with its field.
 */
function errorText(error: unknown): string {
  const { body, headers } = errorAnswer(error, 'screenshot');
  const details = Array.isArray(body.details) ? (body.details as { path: unknown[]; message: string }[]) : [];
  const next = [
    typeof body.required === 'number' && typeof body.available === 'number'
      ? `this call costs ${body.required} ${body.required === 1 ? 'credit' : 'credits'}, the balance is ${body.available}`
      : undefined,
    headers['Retry-After'] ? `try again in ${headers['Retry-After']} s` : undefined,
  ].filter((part) => part !== undefined);
  const reason =
    (details.length === 0 && typeof body.message === 'string'
      ? `${body.error}: ${body.message}`
      : String(body.error)) + (next.length > 0 ? ` (${next.join('; ')})` : '');
  const lines = details
    .slice(0, MAX_ERROR_DETAILS)
    // A detail about the arguments as a whole (an unknown one) has no field to name.
    .map((detail) =>
      (detail.path.length === 0 ? detail.message : `${detail.path.join('.')}: ${detail.message}`).slice(
        0,
        MAX_ERROR_LINE,
      ),
    );
  const more = details.length - lines.length;
  return [reason, ...lines, ...(more > 0 ? [`… and ${more} more`] : [])].join('\n');
}

/**
 * A refusal's text names its first problems only: arguments are not held to a REST body's size, and one detail for
 * each of 60,000 refused headers made an answer nine times the size of the call (red team).
 */
const MAX_ERROR_DETAILS = 20;
const MAX_ERROR_LINE = 300;

async function fetchBytes(url: string): Promise<Buffer> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`The stored file could not be read: HTTP ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

/** The request as the SDK's web-standard transport takes it. The host is ours and never dereferenced. */
function webRequest(request: HttpRequest): Request {
  return new Request(`http://mcp.invalid${request.path}`, {
    method: request.method,
    headers: request.headers,
    ...(request.method === 'POST' ? { body: request.body } : {}),
  });
}

async function httpResponse(response: Response): Promise<HttpResponse> {
  return {
    status: response.status,
    headers: { ...Object.fromEntries(response.headers), 'Cache-Control': 'no-store' },
    body: await response.text(),
  };
}
