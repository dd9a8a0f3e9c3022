import type { Readable } from 'node:stream';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { HEAVY_EVENT_BYTES, type HeavyEvent, onHeavyEvent } from '../../shared/capture/devtoolsMessageCap';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * The traffic guard's byte budget (pageTrafficGuard.ts) counts the heavy events the DevTools pipe reads, on the page's
 * sessions. Here, on real Chromium, each way a page can make such events (long URLs, headers, bodies of any text, a
 * body sent again by 307 redirects, beacons, form posts) is told of with the session of the page's requests, byte for
 * byte as the pipe carried it. Before (session 23), only request bodies were counted, estimated from their text: a
 * page asking for a hundred 2 MB URLs a second (each failed request four 2 MB events) held another account's capture
 * for 15 s and was captured.
 */
const REDIRECTS = 5;
const WAYS: [string, (origin: string) => Promise<unknown>][] = [
  [
    'a 2 MB URL to an address nobody answers',
    () => fetch(`http://10.255.255.1/?${'u'.repeat(2e6)}`).catch(() => 0),
  ],
  ['a 2 MB URL of its own origin', (origin) => fetch(`${origin}/sink?${'u'.repeat(2e6)}`)],
  ['a 1 MB header', (origin) => fetch(`${origin}/sink`, { headers: { 'x-long': 'h'.repeat(1e6) } })],
  ['a body of CJK text', (origin) => fetch(`${origin}/sink`, { method: 'POST', body: '漢'.repeat(1e5) })],
  [
    'a body of bytes that are not UTF-8',
    (origin) => fetch(`${origin}/sink`, { method: 'POST', body: new Uint8Array(1e5).map((_, i) => i % 256) }),
  ],
  [
    'a body sent again by 307 redirects',
    (origin) => fetch(`${origin}/hop`, { method: 'POST', body: 'r'.repeat(1e5) }),
  ],
  ['a beacon', async (origin) => navigator.sendBeacon(`${origin}/sink`, 'b'.repeat(1e5))],
  [
    'a form posted into a frame',
    async (origin) => {
      const frame = Object.assign(document.createElement('iframe'), { name: 'target' });
      document.body.append(frame);
      const form = Object.assign(document.createElement('form'), {
        method: 'POST',
        action: `${origin}/sink`,
        target: 'target',
        enctype: 'text/plain',
      });
      const field = Object.assign(document.createElement('textarea'), { name: 'f', value: 'f'.repeat(1e5) });
      form.append(field);
      document.body.append(form);
      form.submit();
    },
  ],
];

let pages: PageServer;
let browser: Browser;
let page: Page;
/** Heavy messages as read straight from the pipe (their session and size), and as the cap told of them. */
const inPipe: { sessionId?: string; bytes: number }[] = [];
const told: HeavyEvent[] = [];
const pageSessions = new Set<string>();

beforeAll(async () => {
  pages = await startPageServer({
    '/': '<p>posting',
    '/sink': (req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    },
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
  page.on('request', (request) => pageSessions.add(request.client.id()));
  await page.goto(`${pages.origin}/`);
  onHeavyEvent(browser, (event) => told.push(event));
  const pipe = browser.process()?.stdio[4] as Readable | undefined;
  if (!pipe) throw new Error('Chromium has no DevTools pipe');
  let pending = Buffer.alloc(0);
  pipe.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    for (let end = pending.indexOf(0); end !== -1; end = pending.indexOf(0)) {
      const message = pending.subarray(0, end);
      pending = pending.subarray(end + 1);
      if (message.length < HEAVY_EVENT_BYTES || message.subarray(0, 6).toString() === '{"id":') continue;
      const sessionId = /"sessionId":"([0-9A-F]+)"\}$/.exec(message.subarray(-100).toString())?.[1];
      inPipe.push({ bytes: message.length, ...(sessionId ? { sessionId } : {}) });
    }
  });
});

afterAll(async () => {
  await browser?.close();
  await pages?.close();
});

describe("what a page makes the browser write, as the page's traffic guard hears it", () => {
  it.each(WAYS)('%s is told of on the page’s session, byte for byte', async (_, way) => {
    inPipe.length = 0;
    told.length = 0;
    await page.evaluate(way, pages.origin);
    // Its events (a failed request's log entries and issue among them) come within a moment.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(inPipe.length).toBeGreaterThan(0);
    expect(told.map(({ sessionId, bytes }) => ({ sessionId, bytes }))).toEqual(
      inPipe.map(({ sessionId, bytes }) => ({ sessionId, bytes })),
    );
    for (const { sessionId } of told) expect(pageSessions).toContain(sessionId);
  });

  it('counts a body as often as redirects make the browser send it', async () => {
    told.length = 0;
    await page.evaluate(
      (origin) => fetch(`${origin}/hop`, { method: 'POST', body: 'r'.repeat(1e5) }),
      pages.origin,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    const requests = told.filter((event) => event.method === 'Network.requestWillBeSent');
    expect(requests).toHaveLength(REDIRECTS + 1);
  });
});
