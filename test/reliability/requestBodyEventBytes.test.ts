import type { Readable } from 'node:stream';
import type { Browser, HTTPRequest, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { bodyEventBytes, requestEventBytes } from '../../shared/capture/pageTrafficGuard';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * The budget of request bytes (pageTrafficGuard.ts) counts what a request costs the DevTools pipe from what puppeteer
 * hands it. Measured here against the events real Chromium writes, for every kind of text a page may post, a long URL,
 * a long header and a `data:` URL: counting each character of a body as one, and no URL or header at all, let a page
 * put ten times its count in the pipe (session 23). And the ways a page may post that red team 19 left unprobed
 * (beacons, form posts, 307 redirects that send a body again) each reach the guard as a request with its body.
 */
const BODIES: [string, string][] = [
  ['ASCII', 'a'.repeat(50_000)],
  ['quotes and backslashes', '"\\'.repeat(25_000)],
  ['line breaks and tabs', '\n\t'.repeat(25_000)],
  ['control characters', '\x01'.repeat(50_000)],
  ['accented Latin', 'é'.repeat(50_000)],
  ['CJK', '漢'.repeat(50_000)],
  ['emoji', '😀'.repeat(25_000)],
];
/** Bytes of the binary body: every byte value, which Chromium cannot read as UTF-8. */
const BINARY_BYTES = 50_000;
const REDIRECTS = 5;

let pages: PageServer;
let browser: Browser;
let page: Page;
/** Sizes of the request events read from the pipe since the last `posted`, and of every heavy event. */
const requestEvents: number[] = [];
const heavyEvents: number[] = [];

beforeAll(async () => {
  pages = await startPageServer({
    '/': '<p>posting',
    '/sink': (req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    },
    // Five 307 redirects, each of which the browser answers by sending the body again.
    '/hop': (req, res) => {
      const hop = Number(new URL(req.url ?? '', 'http://x').searchParams.get('n') ?? 0);
      req.resume();
      req.on('end', () => {
        if (hop < REDIRECTS) res.writeHead(307, { location: `/hop?n=${hop + 1}` }).end();
        else res.end('ok');
      });
    },
  });
  ({ browser } = await launchChromium());
  page = await browser.newPage();
  await page.goto(`${pages.origin}/`);
  let pending = Buffer.alloc(0);
  const marker = Buffer.from('"method":"Network.requestWillBeSent"');
  const pipe = browser.process()?.stdio[4] as Readable | undefined;
  if (!pipe) throw new Error('Chromium has no DevTools pipe');
  pipe.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    for (let end = pending.indexOf(0); end !== -1; end = pending.indexOf(0)) {
      const message = pending.subarray(0, end);
      if (message.includes(marker)) requestEvents.push(message.length);
      if (message.length >= 64 * 1024) heavyEvents.push(message.length);
      pending = pending.subarray(end + 1);
    }
  });
});

afterAll(async () => {
  await browser?.close();
  await pages?.close();
});

/** Posts `body` (text, or `bytes` of every value) from the page; the request's event size and its text as read. */
async function posted(body: string | number): Promise<{ eventBytes: number; text: string }> {
  requestEvents.length = 0;
  const request = page.waitForRequest((r) => r.url().endsWith('/sink'));
  await page.evaluate(async (body) => {
    const sent = typeof body === 'string' ? body : new Uint8Array(body).map((_, i) => i % 256);
    await fetch('/sink', { method: 'POST', body: sent });
  }, body);
  const text = (await request).postData() ?? '';
  // Read from the pipe before puppeteer, which told of the request, parsed it.
  expect(requestEvents).toHaveLength(1);
  return { eventBytes: Math.max(...requestEvents), text };
}

describe('what a request body costs its DevTools event', () => {
  let envelope: number;

  beforeAll(async () => {
    const { eventBytes, text } = await posted('a');
    envelope = eventBytes - bodyEventBytes(text);
  });

  it.each(BODIES)('is counted within a few percent for %s', async (_, body) => {
    const { eventBytes, text } = await posted(body);
    expect(text).toBe(body);
    const counted = bodyEventBytes(text);
    expect(counted).toBeGreaterThanOrEqual(eventBytes - envelope - 16);
    expect(counted).toBeLessThanOrEqual((eventBytes - envelope) * 1.02);
  });

  it('is counted high, never low, for bytes that are not UTF-8', async () => {
    const { eventBytes, text } = await posted(BINARY_BYTES);
    expect(text).toHaveLength(BINARY_BYTES);
    const counted = bodyEventBytes(text);
    expect(counted).toBeGreaterThanOrEqual(eventBytes - envelope);
    expect(counted).toBeLessThanOrEqual((eventBytes - envelope) * 1.25);
  });
});

describe('a body that 307 redirects send again', () => {
  it('is reported to the guard on every hop, as many times as Chromium writes it', async () => {
    const body = 'r'.repeat(100_000);
    const hops: (string | undefined)[] = [];
    const onRequest = (request: HTTPRequest) => {
      if (new URL(request.url()).pathname === '/hop') hops.push(request.postData());
    };
    page.on('request', onRequest);
    requestEvents.length = 0;
    await page.evaluate(async (body) => {
      await fetch('/hop', { method: 'POST', body });
    }, body);
    page.off('request', onRequest);
    expect(hops).toEqual(Array(REDIRECTS + 1).fill(body));
    expect(requestEvents).toHaveLength(REDIRECTS + 1);
  });
});

describe('the other ways a page posts', () => {
  it.each([
    ['a beacon', (body: string) => navigator.sendBeacon('/sink', body)],
    [
      'a form posted as a navigation of a frame',
      (body: string) => {
        const frame = document.createElement('iframe');
        frame.name = 'target';
        document.body.append(frame);
        const form = Object.assign(document.createElement('form'), {
          method: 'POST',
          action: '/sink',
          target: 'target',
        });
        form.enctype = 'text/plain';
        const field = Object.assign(document.createElement('textarea'), { name: 'b' });
        field.value = body;
        form.append(field);
        document.body.append(form);
        form.submit();
      },
    ],
  ])('reports %s with its body', async (_, post) => {
    const body = 'p'.repeat(100_000);
    const request = page.waitForRequest((r) => r.url().endsWith('/sink'));
    await page.evaluate(post, body);
    expect((await request).postData()).toContain(body);
  });
});

describe('a long URL and long headers', () => {
  it.each<[string, { url: string; headers?: Record<string, string> }]>([
    ['a 2 MB URL that fails', { url: `http://10.255.255.1/?${'u'.repeat(2e6)}` }],
    ['a 1 MB header', { url: '/sink', headers: { 'x-long': 'h'.repeat(1e6) } }],
    ['a 1 MB data: URL', { url: `data:text/plain,${'d'.repeat(1e6)}` }],
  ])('are counted at least as the events about the request carry them: %s', async (_, { url, headers }) => {
    heavyEvents.length = 0;
    const request = page.waitForRequest((r) => r.url().includes(url.slice(0, 30)));
    await page.evaluate((url, headers) => fetch(url, { headers }).catch(() => 0), url, headers ?? {});
    // A failed request's issue and log entries come a moment later.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const carried = heavyEvents.reduce((sum, bytes) => sum + bytes, 0);
    expect(carried).toBeGreaterThan(1e6);
    expect(requestEventBytes(await request)).toBeGreaterThanOrEqual(carried * 0.98);
  });
});
