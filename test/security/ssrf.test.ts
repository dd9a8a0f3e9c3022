import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Canary, startCanary } from '../helpers/egressFixtures';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import {
  decodeImage,
  GREEN,
  near,
  RED,
  type ScreenshotHarness,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

/**
 * Server-side request forgery, through the real screenshot handler and the real capture path (Chromium behind the
 * egress proxy). ALLOW_PRIVATE_HOSTS names only the test's "public" server; a canary on another loopback port
 * stands for everything private (the Lambda runtime API, the metadata service, the VPC) and must never be reached.
 */

let canary: Canary;
let site: PageServer;
let harness: ScreenshotHarness;
let apiKey: string;
const fileMarker = join(tmpdir(), `ssrf-file-${process.pid}-${Date.now()}.html`);

/**
 * A page that starts blue and turns green when `attempt` reports the request failed, red when it succeeded, so the
 * image itself shows what the captured page could do.
 */
function probe(attempt: string): string {
  return `<!doctype html><html style="background:#00f"><head><meta charset="utf-8"><script>
    const blocked = () => { document.documentElement.style.background = '#0f0' };
    const leaked = () => { document.documentElement.style.background = '#f00' };
    ${attempt}
  </script></head><body></body></html>`;
}

const script =
  (status: number, location: () => string) => (_: unknown, res: import('node:http').ServerResponse) => {
    res.writeHead(status, { Location: location() }).end();
  };

beforeAll(async () => {
  canary = await startCanary('127.0.0.1');
  const C = canary.origin;
  site = await startPageServer({
    '/redirect/301': script(301, () => `${C}/301`),
    '/redirect/302': script(302, () => `${C}/302`),
    '/redirect/307': script(307, () => `${C}/307`),
    '/redirect/308': script(308, () => `${C}/308`),
    '/redirect/runtime-api': script(302, () => `http://127.0.0.1:9001/2018-06-01/runtime/invocation/next`),
    '/redirect/metadata': script(
      302,
      () => 'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
    ),
    '/redirect/file': script(302, () => 'file:///proc/self/environ'),
    '/meta-refresh': `<!doctype html><meta http-equiv="refresh" content="0;url=${C}/meta">`,
    '/js-navigation': `<!doctype html><script>location.href = '${C}/js'</script>`,
    '/iframe': probe(
      `addEventListener('DOMContentLoaded', () => { const f = document.createElement('iframe'); f.src = '${C}/iframe'; document.body.append(f); blocked() })`,
    ),
    '/img': probe(`const i = new Image(); i.onload = leaked; i.onerror = blocked; i.src = '${C}/img.png'`),
    '/img-https': probe(
      `const i = new Image(); i.onload = leaked; i.onerror = blocked; i.src = 'https://${canary.hostPort}/img.png'`,
    ),
    '/fetch': probe(`fetch('${C}/fetch', { mode: 'no-cors' }).then(leaked, blocked)`),
    '/xhr': probe(
      `const x = new XMLHttpRequest(); x.onload = leaked; x.onerror = blocked; x.open('GET', '${C}/xhr'); x.send()`,
    ),
    '/websocket': probe(
      `const s = new WebSocket('ws://${canary.hostPort}/ws'); s.onopen = leaked; s.onerror = blocked`,
    ),
    '/websocket-secure': probe(
      `const s = new WebSocket('wss://${canary.hostPort}/ws'); s.onopen = leaked; s.onerror = blocked`,
    ),
    '/worker': probe(
      `const w = new Worker('/worker.js'); w.onmessage = (e) => (e.data === 'blocked' ? blocked : leaked)()`,
    ),
    '/worker.js': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end(
        `fetch('${C}/worker', { mode: 'no-cors' }).then(() => postMessage('leaked'), () => postMessage('blocked'))`,
      );
    },
    // Service workers are refused outright: the registration itself fails, so the worker never runs.
    '/service-worker': probe(`navigator.serviceWorker.register('/sw.js').then(leaked, blocked)`),
    '/sw.js': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      // Requests a service worker makes never pass through page-level request interception.
      res.end(
        `self.addEventListener('install', (e) => e.waitUntil(fetch('${C}/sw', { mode: 'no-cors' }).catch(() => undefined)))`,
      );
    },
    '/file-iframe': probe(
      `addEventListener('DOMContentLoaded', () => { const f = document.createElement('iframe'); f.src = 'file://${fileMarker}'; document.body.append(f); setTimeout(blocked, 300) })`,
    ),
    '/file-fetch': probe(`fetch('file:///proc/self/environ').then(leaked, blocked)`),
    '/file-navigation': probe(`setTimeout(blocked, 500); location.href = 'file://${fileMarker}'`),
    '/webrtc': probe(`
      const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:${canary.host}:${canary.udpPort}' }] });
      pc.createDataChannel('x');
      pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === 'complete') blocked() };
      pc.createOffer().then((offer) => pc.setLocalDescription(offer));`),
    '/plain': probe(''),
    '/file-loaded': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'image/gif' }).end();
    },
  });
  // If a file: URL ever rendered, it would call back to the allowed server on this path.
  await writeFile(fileMarker, `<img src="${site.origin}/file-loaded">`);
  harness = await startScreenshotHarness({
    ALLOW_PRIVATE_HOSTS: site.hostPort,
    RATE_LIMIT_PER_HOUR: '1000',
    FREE_CREDITS: '1000',
  });
  ({ apiKey } = await harness.newAccount());
});

afterAll(async () => {
  await harness?.close();
  await Promise.all([site?.close(), canary?.close()]);
  await rm(fileMarker, { force: true });
});

const capture = (url: string, delay = 0) => harness.shoot(apiKey, { url, width: 320, height: 320, delay });

describe('a screenshot URL that names a private address', () => {
  const forms: [string, () => string][] = [
    ['loopback', () => `http://127.0.0.1:${canary.port}/`],
    ['the Lambda runtime API', () => 'http://127.0.0.1:9001/2018-06-01/runtime/invocation/next'],
    ['the unspecified address 0.0.0.0', () => `http://0.0.0.0:${canary.port}/`],
    ['the metadata service 169.254.169.254', () => 'http://169.254.169.254/latest/meta-data/'],
    ['10/8', () => 'http://10.0.0.1/'],
    ['172.16/12', () => 'http://172.16.0.1/'],
    ['192.168/16', () => 'http://192.168.0.1/'],
    ['carrier-grade NAT 100.64/10', () => 'http://100.64.0.1/'],
    ['unique-local fc00::/7', () => 'http://[fc00::1]/'],
    ['link-local fe80::/10', () => 'http://[fe80::1]/'],
    ['IPv6 loopback ::1', () => `http://[::1]:${canary.port}/`],
    ['IPv4-mapped ::ffff:127.0.0.1', () => `http://[::ffff:127.0.0.1]:${canary.port}/`],
    ['decimal 2130706433', () => `http://2130706433:${canary.port}/`],
    ['hex 0x7f000001', () => `http://0x7f000001:${canary.port}/`],
    ['octal 0177.0.0.1', () => `http://0177.0.0.1:${canary.port}/`],
    ['short 127.1', () => `http://127.1:${canary.port}/`],
    ['localhost', () => `http://localhost:${canary.port}/`],
    ['a *.localhost name', () => `http://app.localhost:${canary.port}/`],
    ['https on loopback', () => `https://127.0.0.1:${canary.port}/`],
    ['the allowed server by the name localhost', () => `http://localhost:${site.port}/`],
  ];

  it.each(forms)('is refused with 400 url_not_allowed: %s', async (_, url) => {
    const response = await capture(url());
    expect(response.status).toBe(400);
    expect(response.json().details).toEqual([
      { code: 'url_not_allowed', path: ['url'], message: expect.stringMatching(/private|reserved|loopback/) },
    ]);
    // The deployed handler never suggests the local setting.
    expect(JSON.stringify(response.json())).not.toContain('ALLOW_PRIVATE_HOSTS');
    expect(canary.connections).toBe(0);
  });

  it('costs no credits when refused', async () => {
    const account = await harness.newAccount();
    const before = await harness.credits.balance(account.accountId);
    await harness.shoot(account.apiKey, { url: `http://127.0.0.1:${canary.port}/` });
    expect(await harness.credits.balance(account.accountId)).toBe(before);
  });

  it('is refused on the allowed host when the port is not the allowed one', async () => {
    const response = await capture(`http://127.0.0.1:${site.port + 1}/`);
    expect(response.status).toBe(400);
    expect(response.json().details?.[0]?.code).toBe('url_not_allowed');
  });
});

describe('a page that ends up at a private address', () => {
  it.each([301, 302, 307, 308])('fails with 500 when it redirects (%i) there', async (status) => {
    const url = `${site.origin}/redirect/${status}`;
    const response = await capture(url);
    expect(response.status).toBe(500);
    expect(response.json()).toEqual({ error: expect.any(String), url, message: expect.any(String) });
    expect(canary.connections).toBe(0);
  });

  it('fails with 500 when it redirects to the Lambda runtime API', async () => {
    expect((await capture(`${site.origin}/redirect/runtime-api`)).status).toBe(500);
  });

  it('fails with 500 when it redirects to the metadata service', async () => {
    expect((await capture(`${site.origin}/redirect/metadata`)).status).toBe(500);
  });

  it('fails with 500 when it redirects to a file: URL', async () => {
    expect((await capture(`${site.origin}/redirect/file`)).status).toBe(500);
  });

  it('fails with 500 when a meta refresh sends it there', async () => {
    const response = await capture(`${site.origin}/meta-refresh`, 500);
    expect(response.status).toBe(500);
    expect(canary.connections).toBe(0);
  });

  it('fails with 500 when a script navigates it there', async () => {
    const response = await capture(`${site.origin}/js-navigation`, 500);
    expect(response.status).toBe(500);
    expect(canary.connections).toBe(0);
  });
});

describe('a page whose parts aim at a private address', () => {
  it.each([
    ['an iframe', '/iframe'],
    ['an image', '/img'],
    ['an https image', '/img-https'],
    ['fetch', '/fetch'],
    ['XMLHttpRequest', '/xhr'],
    ['a WebSocket', '/websocket'],
    ['a secure WebSocket', '/websocket-secure'],
    ['a worker', '/worker'],
    ['a service worker', '/service-worker'],
  ])('is captured with %s blocked and the canary untouched', async (_, path) => {
    const response = await capture(`${site.origin}${path}`, 700);
    expect(response.status).toBe(200);
    const image = await decodeImage(response.body);
    const pixel = image.pixel(10, 10);
    expect(near(pixel, RED)).toBe(false);
    expect(near(pixel, GREEN)).toBe(true);
    expect(canary.connections).toBe(0);
  });
});

describe('a page using WebRTC', () => {
  it('sends no UDP to a STUN server at a private address', async () => {
    const response = await capture(`${site.origin}/webrtc`, 1500);
    expect(response.status).toBe(200);
    expect(canary.datagrams).toBe(0);
  });
});

describe('file: URLs', () => {
  it.each(['file:///etc/passwd', 'file:///proc/self/environ'])(
    'refuses %s as the page with 400',
    async (url) => {
      expect((await capture(url)).status).toBe(400);
    },
  );

  it('never loads a file: iframe inside a page', async () => {
    const response = await capture(`${site.origin}/file-iframe`, 500);
    expect(response.status).toBe(200);
    expect(site.hits).not.toContain('/file-loaded');
  });

  it("never lets a page's script fetch a file: URL", async () => {
    const response = await capture(`${site.origin}/file-fetch`, 300);
    expect(near((await decodeImage(response.body)).pixel(10, 10), GREEN)).toBe(true);
  });

  it('never lets a page navigate itself to a file: URL', async () => {
    const response = await capture(`${site.origin}/file-navigation`, 800);
    expect(response.status).toBe(200);
    expect(near((await decodeImage(response.body)).pixel(10, 10), GREEN)).toBe(true);
    expect(site.hits).not.toContain('/file-loaded');
  });
});

describe("a customer's script (js) aimed at a private address", () => {
  // The page's own script already has blocked() and leaked(): these are the customer's, by other names.
  const verdicts = `const jsBlocked = () => { document.documentElement.style.background = '#0f0' };
    const jsLeaked = () => { document.documentElement.style.background = '#f00' };`;

  it.each([
    ['fetch', () => `fetch('${canary.origin}/js-fetch', { mode: 'no-cors' }).then(jsLeaked, jsBlocked)`],
    [
      'an image',
      () =>
        `const i = new Image(); i.onload = jsLeaked; i.onerror = jsBlocked; i.src = '${canary.origin}/js.png'`,
    ],
    [
      'a WebSocket',
      () =>
        `const s = new WebSocket('ws://${canary.hostPort}/js'); s.onopen = jsLeaked; s.onerror = jsBlocked`,
    ],
    [
      'the metadata service',
      () =>
        `fetch('http://169.254.169.254/latest/meta-data/', { mode: 'no-cors' }).then(jsLeaked, jsBlocked)`,
    ],
  ])('is held to the egress rules: %s is blocked and the canary untouched', async (_, attempt) => {
    const response = await harness.shoot(apiKey, {
      url: `${site.origin}/plain`,
      width: 320,
      height: 320,
      js: `${verdicts}\n${attempt()}`,
      delay: 700,
    });
    expect(response.status).toBe(200);
    expect(near((await decodeImage(response.body)).pixel(10, 10), GREEN)).toBe(true);
    expect(canary.connections).toBe(0);
  });

  it('fails with 500 when it navigates the page there', async () => {
    const response = await harness.shoot(apiKey, {
      url: `${site.origin}/plain`,
      js: `location.href = '${canary.origin}/js-navigation'`,
      delay: 500,
    });
    expect(response.status).toBe(500);
    expect(canary.connections).toBe(0);
  });
});

describe('every capture switch on', () => {
  it.each([
    ['fetch', '/fetch'],
    ['an iframe', '/iframe'],
    ['a WebSocket', '/websocket'],
  ])('still blocks %s aimed at a private address, and the canary is untouched', async (_, path) => {
    const response = await harness.shoot(apiKey, {
      url: `${site.origin}${path}`,
      width: 320,
      height: 320,
      delay: 700,
      blockAds: true,
      blockCookieBanners: true,
      headers: { 'X-Switch': 'on' },
      cookies: [{ name: 'switch', value: 'on' }],
      darkMode: true,
      locale: 'fr-FR',
      timezone: 'Europe/Paris',
      css: 'body { outline: 1px solid transparent }',
      js: `fetch('${canary.origin}/with-switches', { mode: 'no-cors' }).catch(() => undefined)`,
    });
    expect(response.status).toBe(200);
    expect(near((await decodeImage(response.body)).pixel(10, 10), GREEN)).toBe(true);
    expect(canary.connections).toBe(0);
  });
});

describe('the canary', () => {
  it('recorded no connection and no datagram over the whole suite', () => {
    expect(canary.connections).toBe(0);
    expect(canary.datagrams).toBe(0);
    expect(canary.hits).toEqual([]);
  });
});
