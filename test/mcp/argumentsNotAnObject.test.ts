import { describe, expect, it } from 'vitest';
import { mcpRoute } from '../../shared/mcp/mcpRoute';
import { mcpPost } from '../helpers/mcpRequest';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * Red team (round 11, MCP): docs/api.md 17.3 says a call's arguments "are validated by the screenshot request's own
 * order of checks (a bad one counts against the rate limit and leaves a usage record, as a REST 400 does)", refused
 * as a tool result with `isError: true` and the REST error's text. Arguments that are not an object (a string, an
 * array, null) never reach that: the SDK's own parse of `tools/call` throws a ZodError, answered as JSON-RPC
 * `-32603 Internal error` whose message is the validator's raw issue dump (`"expected": "record"`, its schema path,
 * over several lines of JSON), uncounted by the rate limit. A client's mistake is answered as our internal error, in
 * a shape the contract does not have.
 *
 * Fixed: shared/mcp/mcpRoute.ts hands the SDK an empty object in their place (setArgumentsAside), and the use case
 * refuses them as any bad arguments.
 */

async function route() {
  const service = memoryScreenshotService({ now: () => Date.now(), rateLimit: 100 });
  const { key } = await service.addKey('acct', Date.now());
  await service.credits.set('acct', 10);
  return { key, route: mcpRoute({ ...service }) };
}

describe('a tools/call whose arguments are not an object', () => {
  for (const args of ['abc', [1, 2], null] as const) {
    it(`(${JSON.stringify(args)}) is refused as the contract says, not as an internal error dumping the validator`, async () => {
      const { key, route: mcp } = await route();
      const answer = await mcp(
        mcpPost(key, {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'take_screenshot', arguments: args },
        }),
      );
      const body = JSON.parse(String(answer.body)) as {
        result?: { isError?: boolean; content?: { text?: string }[] };
        error?: { code: number; message: string };
      };
      // Before: {"error":{"code":-32603,"message":"[\n  {\n    \"expected\": \"record\", ..."}}.
      expect(body.error?.code).not.toBe(-32603);
      expect(String(body.error?.message ?? '')).not.toContain('"expected"');
      // Either the documented tool result, or an invalid-params refusal.
      if (body.error) expect(body.error.code).toBe(-32602);
      else expect(body.result?.isError).toBe(true);
    });
  }
});

/**
 * Red team (round 12): the rest of a call went through the SDK's parse still: a name that is no string, or no params,
 * was answered `-32603` with the dump. Fixed: such a call is handed over as one to no tool, refused `-32602`.
 */
const calls: [string, Record<string, unknown>][] = [
  ['a name that is no string', { params: { name: 5, arguments: { url: 'https://example.com/' } } }],
  ['an array for a name', { params: { name: ['take_screenshot'], arguments: {} } }],
  ['no params at all', {}],
];

describe('a tools/call whose params are not what a call holds', () => {
  for (const [what, rest] of calls) {
    it(`(${what}) is refused as the client's mistake, not as an internal error dumping the validator`, async () => {
      const { key, route: mcp } = await route();
      const answer = await mcp(mcpPost(key, { jsonrpc: '2.0', id: 1, method: 'tools/call', ...rest }));
      const body = JSON.parse(String(answer.body)) as {
        result?: { isError?: boolean };
        error?: { code: number; message: string };
      };
      expect(body.error).toMatchObject({ code: -32602 });
      expect(String(body.error?.message ?? '')).not.toContain('"expected"');
    });
  }
});
