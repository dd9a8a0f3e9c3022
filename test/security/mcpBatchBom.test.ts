import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpRoute } from '../../shared/mcp/mcpRoute';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { mcpPost, toolCall } from '../helpers/mcpRequest';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 4): POST /mcp refuses a JSON-RPC batch by testing the body's text for a `[` after JSON white space,
 * but the SDK's transport reads the body with a TextDecoder, which drops a leading UTF-8 byte order mark. A batch
 * sent after a BOM is therefore run as a batch: the exploit the refusal was made for works again. The client reads
 * the first result (a PDF's link), hangs up while the padding call's megabytes of Markdown still stream, and every
 * call of the batch is given back, the PDF included.
 */

// ~20 MB of Markdown: far more than the loopback connection buffers, so the server sees the hang-up.
const PADDING = `<!doctype html><html><body><pre>${`${'x'.repeat(99)}\n`.repeat(200_000)}</pre></body></html>`;

let site: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  site = await startPageServer({
    '/invoice': '<!doctype html><html><body><h1>Invoice 42</h1><p>Total: 1,000 EUR</p></body></html>',
    '/padding': PADDING,
  });
  service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: site.hostPort });
}, 120_000);
afterAll(async () => {
  await service?.close();
  await site?.close();
});

const balance = async (token: string) =>
  (await (await service.request('/api/credits', { bearer: token })).json()).balance as number;

/** POSTs `body` to /mcp; reads until the answer names a link (or ends), then hangs up. */
function readLinkThenHangUp(apiKey: string, body: string): Promise<{ status: number; link?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL('/mcp', service.url), {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${apiKey}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
    });
    req.on('response', (res) => {
      let seen = '';
      const status = res.statusCode ?? 0;
      res.on('error', () => undefined);
      res.on('data', (chunk: Buffer) => {
        seen += chunk.toString('latin1');
        const link = /"uri":"(http[^"]+)"/.exec(seen)?.[1];
        if (!link) return;
        res.pause();
        // Let the buffers between us fill, so the server is still sending when we go.
        setTimeout(() => {
          req.destroy();
          resolve({ status, link });
        }, 500);
      });
      res.on('end', () => resolve({ status }));
    });
    req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
    req.end(body);
  });
}

describe('a JSON-RPC batch after a byte order mark', () => {
  it('is refused like any batch, so no PDF is had for free', { timeout: 180_000 }, async () => {
    const { apiKey, token } = await service.newAccount();
    expect(await balance(token)).toBe(100);
    const batch = [
      toolCall({ name: 'get_page_pdf', arguments: { url: `${site.origin}/invoice` } }, 1),
      toolCall({ name: 'get_page_markdown', arguments: { url: `${site.origin}/padding` } }, 2),
    ];
    const answer = await readLinkThenHangUp(apiKey, `\uFEFF${JSON.stringify(batch)}`);
    let pdfDownloaded = false;
    if (answer.link) {
      const pdf = Buffer.from(await (await fetch(answer.link)).arrayBuffer());
      pdfDownloaded = pdf.subarray(0, 5).toString('latin1') === '%PDF-';
    }
    // The refund, if any, is written once the server saw the connection go.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    // Today: { status: 200, pdfDownloaded: true, balance: 100 }: the PDF and the padding call both given back.
    expect({ status: answer.status, pdfDownloaded, balance: await balance(token) }).toEqual({
      status: 400,
      pdfDownloaded: false,
      balance: 100,
    });
  });

  it('is refused before any of its calls runs (the route over in-memory ports)', async () => {
    const service = memoryScreenshotService({ now: () => Date.now() });
    const { key } = await service.addKey('acct', Date.now());
    await service.credits.set('acct', 10);
    const route = mcpRoute({
      capture: service.capture,
      keys: service.keys,
      cancelledCalls: service.cancelledCalls,
    });
    const request = mcpPost(key, [
      toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/one' } }, 1),
      toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/two' } }, 2),
    ]);
    const answer = await route({ ...request, body: `\uFEFF${request.body}` });
    // Today: 200 with both results, two captures charged.
    expect({ status: answer.status, captures: service.renderer.captures.length }).toEqual({
      status: 400,
      captures: 0,
    });
  });
});
