import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'puppeteer-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type BlockedEgress, type EgressProxy, startEgressProxy } from '../../shared/egress/egressProxy';
import {
  type Canary,
  launchEgressBrowser,
  scriptedLookup,
  startCanary,
  startWebSocketServer,
  type WebSocketServer,
  waitForTitle,
} from '../helpers/egressFixtures';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * Real Chromium, launched with the egress flags, loading pages from an allowed "public" server that try every way
 * to reach a canary on a port that is not allowed. The canary must see no TCP connection and no UDP datagram.
 */

let canary: Canary;
let rebindCanary: Canary;
let site: PageServer;
let sockets: WebSocketServer;
let proxy: EgressProxy;
let browser: Browser;
let context: BrowserContext | undefined;
const blocked: BlockedEgress[] = [];
const fileMarker = join(tmpdir(), `egress-file-${process.pid}-${Date.now()}.html`);

const html = (body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>start</title></head><body>${body}</body></html>`;
const script = (code: string) => html(`<script>${code}</script>`);
const redirect =
  (status: number, location: () => string) => (_: unknown, res: import('node:http').ServerResponse) => {
    res.writeHead(status, { Location: location() }).end();
  };

beforeAll(async () => {
  canary = await startCanary('127.0.0.1');
  const C = canary.origin;
  const tls = `https://${canary.hostPort}`;
  const ws = `ws://${canary.hostPort}`;
  sockets = await startWebSocketServer('hello from the allowed server');
  site = await startPageServer({
    '/': html('<p>public</p>'),
    '/redirect/301': redirect(301, () => `${C}/301`),
    '/redirect/302': redirect(302, () => `${C}/302`),
    '/redirect/307': redirect(307, () => `${C}/307`),
    '/redirect/308': redirect(308, () => `${C}/308`),
    '/redirect/metadata': redirect(302, () => 'http://169.254.169.254/latest/meta-data/'),
    '/redirect/https': redirect(302, () => `${tls}/https`),
    '/meta-refresh': `<!doctype html><meta http-equiv="refresh" content="0;url=${C}/meta">`,
    '/js-navigation': script(`location.href = '${C}/js'`),
    '/iframe': html(`<iframe src="${C}/iframe"></iframe>`),
    '/img': html(`<img src="${C}/img">`),
    '/img-https': html(`<img src="${tls}/img">`),
    '/img-localhost': html(`<img src="http://localhost:${canary.port}/img">`),
    '/img-numeric': html(
      `<img src="http://2130706433:${canary.port}/img"><img src="http://0x7f.1:${canary.port}/img">`,
    ),
    '/img-ipv6': html(`<img src="http://[::ffff:127.0.0.1]:${canary.port}/img">`),
    '/fetch': script(
      `fetch('${C}/fetch', { mode: 'no-cors' }).then(() => document.title = 'loaded', () => document.title = 'blocked')`,
    ),
    '/xhr': script(
      `const x = new XMLHttpRequest(); x.onload = () => document.title = 'loaded'; x.onerror = () => document.title = 'blocked'; x.open('GET', '${C}/xhr'); x.send()`,
    ),
    '/fetch-public': script(
      `fetch('/').then(r => r.text()).then(t => document.title = t.includes('public') ? 'loaded' : 'wrong', () => document.title = 'blocked')`,
    ),
    '/websocket': script(
      `const s = new WebSocket('${ws}/ws'); s.onopen = () => document.title = 'open'; s.onerror = () => document.title = 'blocked'`,
    ),
    '/websocket-secure': script(
      `const s = new WebSocket('wss://${canary.hostPort}/ws'); s.onopen = () => document.title = 'open'; s.onerror = () => document.title = 'blocked'`,
    ),
    '/websocket-public': script(
      `const s = new WebSocket('${sockets.origin}/ws'); s.onmessage = (e) => document.title = e.data; s.onerror = () => document.title = 'blocked'`,
    ),
    '/worker': script(`const w = new Worker('/worker.js'); w.onmessage = (e) => document.title = e.data`),
    '/worker.js': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end(
        `fetch('${C}/worker', { mode: 'no-cors' }).then(() => postMessage('loaded'), () => postMessage('blocked'))`,
      );
    },
    '/worker-import': script(
      `const w = new Worker('/worker-import.js'); w.onmessage = (e) => document.title = e.data`,
    ),
    '/worker-import.js': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end(
        `try { importScripts('${C}/import.js'); postMessage('loaded') } catch { postMessage('blocked') }`,
      );
    },
    '/worker-websocket': script(
      `const w = new Worker('/worker-websocket.js'); w.onmessage = (e) => document.title = e.data`,
    ),
    '/worker-websocket.js': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end(
        `const s = new WebSocket('${ws}/worker-ws'); s.onopen = () => postMessage('open'); s.onerror = () => postMessage('blocked')`,
      );
    },
    '/service-worker': script(
      `navigator.serviceWorker.register('/sw.js').then(() => document.title = 'registered', (e) => document.title = 'failed ' + e)`,
    ),
    '/sw.js': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      // Requests a service worker makes never pass through page-level request interception.
      res.end(
        `self.addEventListener('install', (e) => e.waitUntil(fetch('${C}/sw', { mode: 'no-cors' }).catch(() => undefined)))`,
      );
    },
    '/hints': html(
      `<link rel="preconnect" href="${C}"><link rel="dns-prefetch" href="${C}"><link rel="prefetch" href="${C}/prefetch"><link rel="preload" as="image" href="${C}/preload">`,
    ),
    '/beacon': script(
      `navigator.sendBeacon('${C}/beacon', 'x'); new EventSource('${C}/sse'); document.title = 'sent'`,
    ),
    '/css': html(
      `<style>@import url('${C}/import.css'); body { background: url('${C}/bg.png') }</style><p>x</p>`,
    ),
    '/webrtc': script(`
      const done = () => { document.title = 'gathered' };
      const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:${canary.host}:${canary.udpPort}' }] });
      pc.createDataChannel('x');
      pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === 'complete') done() };
      pc.createOffer().then((offer) => pc.setLocalDescription(offer));
      setTimeout(done, 4000);`),
    // HTTP/3 over UDP, which no HTTP proxy carries; without the egress flags Chromium sends the canary datagrams.
    '/webtransport': script(`
      new WebTransport('https://${canary.host}:${canary.udpPort}/').ready.then(
        () => { document.title = 'open' },
        () => { document.title = 'failed' },
      );`),
    '/file-iframe': html(
      `<iframe src="file://${fileMarker}" onload="document.title='frame-event'"></iframe>`,
    ),
    '/file-fetch': script(
      `fetch('file://${fileMarker}').then(() => document.title = 'loaded', () => document.title = 'blocked')`,
    ),
    '/file-navigation': script(
      `location.href = 'file://${fileMarker}'; setTimeout(() => document.title = 'stayed', 1000)`,
    ),
    '/rebind': script(
      `setTimeout(() => fetch('/again').then(() => document.title = 'loaded', () => document.title = 'blocked'), 50)`,
    ),
    '/again': html('<p>again</p>'),
  });
  // If a file: URL ever rendered, it would ask the allowed server for this path.
  await writeFile(
    fileMarker,
    `<img src="${site.origin}/file-loaded"><script>document.title='file-loaded'</script>`,
  );
  // Same port as the allowed site on another loopback address: only reachable by re-resolving.
  rebindCanary = await startCanary('127.0.0.2', site.port);
  const dns = scriptedLookup({ 'rebind.example': [['127.0.0.1'], ['127.0.0.2']] });
  proxy = await startEgressProxy({
    allowPrivateHosts: `${site.hostPort},${sockets.hostPort}`,
    lookup: dns.lookup,
    onBlocked: (b) => blocked.push(b),
  });
  browser = await launchEgressBrowser(proxy.url);
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([
    proxy?.close(),
    site?.close(),
    sockets?.close(),
    canary?.close(),
    rebindCanary?.close(),
  ]);
  await rm(fileMarker, { force: true });
});

let connectionsBefore = 0;
beforeEach(() => {
  blocked.length = 0;
  connectionsBefore = canary.connections;
});

afterEach(async () => {
  await context?.close();
  context = undefined;
});

async function open(path: string, origin = site.origin): Promise<Page> {
  context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.goto(`${origin}${path}`, { waitUntil: 'load' }).catch(() => undefined);
  return page;
}

/** Waits until the proxy refused something on the canary's port (or, if protection failed, the canary was hit). */
async function attemptOnCanary(port = canary.port, timeoutMs = 8_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!blocked.some((b) => b.port === port) && canary.connections === connectionsBefore) {
    if (Date.now() > deadline) throw new Error(`no attempt on port ${port} was seen`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function expectCanaryUntouched(): void {
  expect(canary.connections - connectionsBefore).toBe(0);
  expect(canary.datagrams).toBe(0);
}

describe('Chromium behind the egress proxy', () => {
  it('loads a page from the allowed server', async () => {
    const page = await open('/');
    expect(await page.content()).toContain('public');
  });

  it('lets a page fetch from the allowed server', async () => {
    const page = await open('/fetch-public');
    expect(await waitForTitle(page, (t) => t !== 'start')).toBe('loaded');
  });

  it('lets a page open a WebSocket to an allowed server', async () => {
    const page = await open('/websocket-public');
    expect(await waitForTitle(page, (t) => t !== 'start')).toBe('hello from the allowed server');
  });

  it.each([301, 302, 307, 308])(
    'fails a navigation that redirects (%i) to a private address',
    async (status) => {
      context = await browser.createBrowserContext();
      const page = await context.newPage();
      await expect(page.goto(`${site.origin}/redirect/${status}`)).rejects.toThrow(/net::ERR_/);
      expectCanaryUntouched();
      expect(blocked.map((b) => b.port)).toContain(canary.port);
    },
  );

  it('fails a navigation that redirects to the metadata address', async () => {
    context = await browser.createBrowserContext();
    const page = await context.newPage();
    await expect(page.goto(`${site.origin}/redirect/metadata`)).rejects.toThrow(/net::ERR_/);
    expect(blocked).toContainEqual(expect.objectContaining({ host: '169.254.169.254', port: 80 }));
  });

  it('fails a navigation that redirects to https on a private address', async () => {
    context = await browser.createBrowserContext();
    const page = await context.newPage();
    await expect(page.goto(`${site.origin}/redirect/https`)).rejects.toThrow(/net::ERR_/);
    expectCanaryUntouched();
  });

  it.each([
    ['a meta refresh', '/meta-refresh'],
    ['a script navigation', '/js-navigation'],
    ['an iframe', '/iframe'],
    ['an image', '/img'],
    ['an https image (CONNECT)', '/img-https'],
    ['an image on localhost', '/img-localhost'],
    ['images on numeric host forms', '/img-numeric'],
    ['an image on IPv4-mapped IPv6', '/img-ipv6'],
    ['fetch', '/fetch'],
    ['XMLHttpRequest', '/xhr'],
    ['a WebSocket', '/websocket'],
    ['a secure WebSocket', '/websocket-secure'],
    ['a dedicated worker fetch', '/worker'],
    ['a dedicated worker importScripts', '/worker-import'],
    ['a WebSocket from a worker', '/worker-websocket'],
    ['prefetch and preload hints', '/hints'],
    ['sendBeacon and EventSource', '/beacon'],
    ['CSS @import and background images', '/css'],
  ])('blocks %s aimed at a private address', async (_, path) => {
    await open(path);
    await attemptOnCanary();
    // Give any second path (retries, preconnects) a moment to show up too.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expectCanaryUntouched();
  });

  it('refuses a service worker outright: its registration fails and its script is never fetched', async () => {
    const page = await open('/service-worker');
    expect(await waitForTitle(page, (t) => t !== 'start')).toMatch(/^failed TypeError: Failed to register/);
    expect(site.hits).not.toContain('/sw.js');
    expectCanaryUntouched();
  });

  it('reports the failure to the page when a fetch is blocked', async () => {
    const page = await open('/fetch');
    expect(await waitForTitle(page, (t) => t !== 'start')).toBe('blocked');
  });

  it('reports the failure to the page when a WebSocket is blocked', async () => {
    const page = await open('/websocket');
    expect(await waitForTitle(page, (t) => t !== 'start')).toBe('blocked');
  });

  it('sends no UDP to a STUN server on a private address', async () => {
    const page = await open('/webrtc');
    await waitForTitle(page, (t) => t === 'gathered');
    expectCanaryUntouched();
  });

  it('sends no UDP for a WebTransport session to a private address', async () => {
    const page = await open('/webtransport');
    expect(await waitForTitle(page, (t) => t !== 'start')).toBe('failed');
    expectCanaryUntouched();
  });
});

describe('Chromium and file: URLs', () => {
  it('does not load a file: iframe', async () => {
    const page = await open('/file-iframe');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(site.hits).not.toContain('/file-loaded');
    expect(
      page.frames().some((frame) => frame.url().startsWith('file:') && frame.url() !== 'about:blank'),
    ).toBe(false);
  });

  it('does not let a page fetch a file: URL', async () => {
    const page = await open('/file-fetch');
    expect(await waitForTitle(page, (t) => t !== 'start')).toBe('blocked');
  });

  it('does not let a page navigate itself to a file: URL', async () => {
    const page = await open('/file-navigation');
    expect(await waitForTitle(page, (t) => t !== 'start')).toBe('stayed');
    expect(page.url()).toBe(`${site.origin}/file-navigation`);
    expect(site.hits).not.toContain('/file-loaded');
  });
});

describe('Chromium and DNS rebinding', () => {
  it('loads a page by a name that first resolves to the allowed address, then cannot reach what it rebinds to', async () => {
    const page = await open('/rebind', `http://rebind.example:${site.port}`);
    expect(await page.content()).toContain('setTimeout');
    expect(await waitForTitle(page, (t) => t !== 'start')).toBe('blocked');
    expect(rebindCanary.connections).toBe(0);
  });
});
