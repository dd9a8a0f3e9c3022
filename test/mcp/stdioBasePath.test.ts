import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpStdioClient } from '../helpers/mcpRequest';

/**
 * docs/api.md 17.3: `npm run mcp` forwards to `SCREENSHOT_API_URL` + `/mcp`, and section 1 gives the deployed base URL
 * with its stage (`https://<api-id>.execute-api.<region>.amazonaws.com/prod`). Red team: the bridge dropped the base's
 * path, so every call went to `/mcp` at the host's root (API Gateway answers 403 there). A stand-in records the path.
 */

let api: Server;
let base: string;
const paths: string[] = [];

beforeAll(async () => {
  api = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(403, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ message: 'Missing Authentication Token' }));
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(api.address() as AddressInfo).port}/prod`;
});

afterAll(async () => {
  await new Promise((resolve) => api?.close(resolve));
});

describe('npm run mcp with the deployed base URL (a stage path)', () => {
  it('posts to the base URL + /mcp', async () => {
    const client = await mcpStdioClient(base, `sk_live_${'0'.repeat(40)}`);
    try {
      await client.listTools().catch(() => undefined);
    } finally {
      await client.close();
    }
    // Before: ['/mcp'].
    expect(paths).toEqual(['/prod/mcp']);
  }, 60_000);
});
