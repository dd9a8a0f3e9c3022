import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, solidPage, startPageServer, unusedPort } from '../helpers/pageServer';
import { awayFromWindowEdge, SUITE_MARGIN_MS, SUITE_WAIT_HOOK_TIMEOUT_MS } from '../helpers/rateWindow';
import {
  BLUE,
  decodeImage,
  GREEN,
  near,
  RED,
  type ScreenshotHarness,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

let pages: PageServer;
let harness: ScreenshotHarness;
let closedPort: number;

beforeAll(async () => {
  const greenPng = await sharp({ create: { width: 400, height: 400, channels: 3, background: '#00ff00' } })
    .png()
    .toBuffer();
  pages = await startPageServer({
    '/red': solidPage('#ff0000'),
    '/tall': solidPage(
      '#ff0000',
      '',
      '<div style="height:3000px;background:linear-gradient(#f00 0 2900px,#00f 2900px)"></div>',
    ),
    '/huge': solidPage('#ff0000', '', '<div style="height:20000px"></div>'),
    '/lazy': solidPage(
      '#ff0000',
      '',
      '<div style="height:3600px"></div><img src="/green.png" loading="lazy" width="400" height="400" style="display:block">',
    ),
    '/green.png': (_, res) => {
      res.writeHead(200, { 'Content-Type': 'image/png' }).end(greenPng);
    },
    // A web component whose lazy image, in its open shadow root, arrives 800 ms after it is asked for.
    '/lazy-shadow': solidPage(
      '#ff0000',
      '',
      `<div style="height:3600px"></div><lazy-card style="display:block"></lazy-card><script>
customElements.define('lazy-card', class extends HTMLElement {
  connectedCallback() {
    this.attachShadow({ mode: 'open' }).innerHTML =
      '<img src="/green-slow.png" loading="lazy" width="400" height="400" style="display:block">';
  }
});</script>`,
    ),
    '/green-slow.png': (_, res) => {
      setTimeout(() => res.writeHead(200, { 'Content-Type': 'image/png' }).end(greenPng), 800);
    },
    '/device': solidPage(
      '#ff0000',
      `<script>addEventListener('DOMContentLoaded',()=>{const m=/iPhone/.test(navigator.userAgent)&&navigator.maxTouchPoints>0;document.documentElement.style.background=m?'#00ff00':'#ff0000'});</script>`,
    ),
    '/later': solidPage(
      '#ff0000',
      `<script>setTimeout(()=>{document.documentElement.style.background='#0000ff';document.body.style.background='#0000ff'},300)</script>`,
    ),
    '/noise': solidPage(
      '#000',
      '',
      `<canvas id=c width=640 height=480></canvas><script>const c=document.getElementById('c').getContext('2d');let s=7;for(let y=0;y<480;y+=4)for(let x=0;x<640;x+=4){s=(s*1103515245+12345)&0x7fffffff;c.fillStyle='#'+(s&0xffffff).toString(16).padStart(6,'0');c.fillRect(x,y,4,4)}</script>`,
    ),
    '/canvases': solidPage(
      '#ff0000',
      '',
      `<canvas id=gl width=100 height=100></canvas><canvas id=flat width=100 height=100></canvas><script>const gl=document.getElementById('gl').getContext('webgl');gl.clearColor(0,0,1,1);gl.clear(gl.COLOR_BUFFER_BIT);const c=document.getElementById('flat').getContext('2d');c.fillStyle='#00ff00';c.fillRect(0,0,100,100)</script>`,
    ),
    '/gone': (_, res) => {
      res.writeHead(404, { 'Content-Type': 'text/html' }).end(solidPage('#0000ff', '', '<h1>Not here</h1>'));
    },
  });
  closedPort = await unusedPort();
  harness = await startScreenshotHarness({
    ALLOW_PRIVATE_HOSTS: `${pages.hostPort},127.0.0.1:${closedPort}`,
  });
});

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

const url = (path: string) => `${pages.origin}${path}`;

describe('authentication', () => {
  it.each([
    ['no Authorization header', undefined, /Missing API key/],
    ['a key in the wrong format', 'sk_live_short', /Invalid API key/],
    ['a well-formed key that does not exist', `sk_live_${'0'.repeat(40)}`, /Invalid API key/],
  ])('refuses %s with 401 and no rate-limit headers', async (_, key, message) => {
    const response = await harness.shoot(key, { url: url('/red') });
    expect(response.status).toBe(401);
    expect(response.json()).toEqual({ error: expect.stringMatching(message) });
    expect(response.headers['X-RateLimit-Limit']).toBeUndefined();
  });

  it('refuses a revoked key from the very next request', async () => {
    const account = await harness.newAccount();
    await harness.manage('updateKey', {
      bearer: account.token,
      pathParameters: { id: account.keyId },
      body: { isActive: false },
    });
    const response = await harness.shoot(account.apiKey, { url: url('/red') });
    expect(response.status).toBe(401);
    expect(response.json().error).toMatch(/revoked/);
  });

  it('refuses a deleted key from the very next request', async () => {
    const account = await harness.newAccount();
    await harness.manage('deleteKey', { bearer: account.token, pathParameters: { id: account.keyId } });
    expect((await harness.shoot(account.apiKey, { url: url('/red') })).status).toBe(401);
  });

  it('refuses a session token used as an API key', async () => {
    const account = await harness.newAccount();
    expect((await harness.shoot(account.token, { url: url('/red') })).status).toBe(401);
  });

  it('checks the key before anything else: a bad body with a bad key is a 401', async () => {
    expect((await harness.shoot(`sk_live_${'1'.repeat(40)}`, 'not json')).status).toBe(401);
  });
});

describe('validation', () => {
  it.each([
    ['a missing url', {}, 'url'],
    ['a url that is not a URL', { url: 'not a url' }, 'url'],
    ['an ftp url', { url: 'ftp://example.com/file' }, 'url'],
    ['a javascript url', { url: 'javascript:alert(1)' }, 'url'],
    ['a file url', { url: 'file:///etc/passwd' }, 'url'],
    ['a url over 2048 characters', { url: `https://example.com/${'a'.repeat(2048)}` }, 'url'],
    ['a width below 320', { url: 'https://example.com', width: 319 }, 'width'],
    ['a height above 3840', { url: 'https://example.com', height: 3841 }, 'height'],
    ['a width that is not a whole number', { url: 'https://example.com', width: 800.5 }, 'width'],
    ['a width given as a string', { url: 'https://example.com', width: '800' }, 'width'],
    ['an unknown format', { url: 'https://example.com', format: 'gif' }, 'format'],
    ['quality 0', { url: 'https://example.com', quality: 0 }, 'quality'],
    ['quality 101', { url: 'https://example.com', quality: 101 }, 'quality'],
    ['fullPage as a string', { url: 'https://example.com', fullPage: 'true' }, 'fullPage'],
    ['an unknown device', { url: 'https://example.com', device: 'watch' }, 'device'],
    ['a negative delay', { url: 'https://example.com', delay: -1 }, 'delay'],
    ['a delay above 30000', { url: 'https://example.com', delay: 30_001 }, 'delay'],
  ])('refuses %s with 400 naming the field', async (_, body, field) => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, body);
    expect(response.status).toBe(400);
    const json = response.json();
    expect(json.error).toEqual(expect.any(String));
    expect(json.details).toContainEqual({
      code: expect.any(String),
      path: [field],
      message: expect.any(String),
    });
  });

  it('refuses unknown fields', async () => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, { url: url('/red'), colour: 'blue' });
    expect(response.status).toBe(400);
    expect(response.json().details).toContainEqual(expect.objectContaining({ code: 'unrecognized_keys' }));
  });

  it.each([
    ['malformed JSON', '{"url":'],
    ['a JSON array', '[]'],
    ['a JSON string', '"https://example.com"'],
    ['null', 'null'],
  ])('refuses %s with 400', async (_, body) => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, body);
    expect(response.status).toBe(400);
    expect(response.json().details?.length).toBeGreaterThan(0);
  });

  it('charges nothing for a refused request', async () => {
    const account = await harness.newAccount();
    await harness.shoot(account.apiKey, { url: url('/red'), width: 10 });
    expect(await harness.credits.balance(account.accountId)).toBe(100);
  });
});

describe('credits', () => {
  it.each([
    ['a viewport capture', 1, { url: '/red' }],
    ['a full-page capture', 2, { url: '/red', fullPage: true }],
    ['a capture wider than 2560', 3, { url: '/red', width: 2561, height: 400 }],
    ['a full-page capture taller than 2560', 3, { url: '/red', height: 2600, fullPage: true }],
    ['a device preset, which overrides a large width', 1, { url: '/red', device: 'mobile', width: 3000 }],
  ])('charges %s exactly %i credit(s)', async (_, cost, body) => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, { ...body, url: url(body.url) });
    expect(response.status).toBe(200);
    expect(response.headers['X-Credits-Charged']).toBe(String(cost));
    expect(await harness.credits.balance(account.accountId)).toBe(100 - cost);
  });

  it('refuses with 402 when the balance is below the cost, naming required and available', async () => {
    const account = await harness.newAccount();
    await harness.credits.set(account.accountId, 1);
    const response = await harness.shoot(account.apiKey, { url: url('/red'), fullPage: true });
    expect(response.status).toBe(402);
    expect(response.json()).toEqual({ error: expect.any(String), required: 2, available: 1 });
    expect(await harness.credits.balance(account.accountId)).toBe(1);
  });

  it('gives the credits back when the capture fails, and answers 500 with url and message', async () => {
    const account = await harness.newAccount();
    const target = `http://127.0.0.1:${closedPort}/`;
    const response = await harness.shoot(account.apiKey, { url: target, fullPage: true });
    expect(response.status).toBe(500);
    expect(response.json()).toEqual({
      error: expect.any(String),
      url: target,
      message: expect.stringMatching(/ERR_/),
    });
    expect(await harness.credits.balance(account.accountId)).toBe(100);
  });

  it('records lastUsed on the key', async () => {
    const account = await harness.newAccount();
    const before = Date.now();
    await harness.shoot(account.apiKey, { url: url('/red'), width: 320, height: 320 });
    const listed = await harness.manage('listKeys', { bearer: account.token });
    expect(listed.body.keys[0].lastUsed).toBeGreaterThanOrEqual(before);
  });
});

describe('rate limit', () => {
  let limited: ScreenshotHarness;
  beforeAll(async () => {
    await awayFromWindowEdge(SUITE_MARGIN_MS);
    limited = await startScreenshotHarness({ RATE_LIMIT_PER_HOUR: '3', ALLOW_PRIVATE_HOSTS: pages.hostPort });
  }, SUITE_WAIT_HOOK_TIMEOUT_MS);
  afterAll(() => limited?.close());

  it('counts every authenticated request per account across keys, and answers 429 past the limit', async () => {
    const account = await limited.newAccount();
    const second = await limited.addKey(account.token);
    const bad = { url: 'not a url' };
    const statuses = [
      (await limited.shoot(account.apiKey, bad)).status,
      (await limited.shoot(second.apiKey, bad)).status,
      (await limited.shoot(account.apiKey, bad)).status,
    ];
    expect(statuses).toEqual([400, 400, 400]);
    const response = await limited.shoot(second.apiKey, { url: url('/red') });
    expect(response.status).toBe(429);
    const hourEnd = Math.ceil(Date.now() / 3_600_000) * 3_600_000;
    expect(response.json()).toEqual({ error: expect.any(String), limit: 3, reset: hourEnd });
    expect(response.headers).toMatchObject({
      'X-RateLimit-Limit': '3',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(hourEnd),
    });
    const retryAfter = Number(response.headers['Retry-After']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);
  });

  it('keeps accounts apart', async () => {
    const busy = await limited.newAccount();
    for (let i = 0; i < 4; i++) await limited.shoot(busy.apiKey, {});
    const quiet = await limited.newAccount();
    expect((await limited.shoot(quiet.apiKey, {})).status).toBe(400);
  });

  it('reports the remaining count on every authenticated response', async () => {
    const account = await limited.newAccount();
    const first = await limited.shoot(account.apiKey, {});
    const second = await limited.shoot(account.apiKey, { url: url('/red'), width: 320, height: 320 });
    expect(first.headers['X-RateLimit-Remaining']).toBe('2');
    expect(second.status).toBe(200);
    expect(second.headers['X-RateLimit-Remaining']).toBe('1');
  });
});

describe('the image', () => {
  it('is a 1920x1080 PNG by default, with the spec headers', async () => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, { url: url('/red') });
    expect(response.status).toBe(200);
    expect(response.body.subarray(0, 8)).toEqual(
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    );
    const image = await decodeImage(response.body);
    expect([image.format, image.width, image.height]).toEqual(['png', 1920, 1080]);
    expect(near(image.pixel(960, 540), RED, 0)).toBe(true);
    expect(response.headers).toMatchObject({
      'Content-Type': 'image/png',
      'Content-Length': String(response.body.length),
      ETag: `"${createHash('md5').update(response.body).digest('hex')}"`,
      'Cache-Control': 'public, max-age=3600, stale-while-revalidate=86400',
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Remaining': expect.stringMatching(/^\d+$/),
      'X-RateLimit-Reset': expect.stringMatching(/^\d{13}$/),
    });
  });

  it('has exactly the requested viewport size', async () => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, { url: url('/red'), width: 800, height: 333 });
    const image = await decodeImage(response.body);
    expect([image.width, image.height]).toEqual([800, 333]);
  });

  it('is a JPEG when asked, and its quality changes its size', async () => {
    const account = await harness.newAccount();
    const noise = { url: url('/noise'), width: 640, height: 480, format: 'jpeg' };
    const low = await harness.shoot(account.apiKey, { ...noise, quality: 10 });
    const high = await harness.shoot(account.apiKey, { ...noise, quality: 95 });
    expect(low.headers['Content-Type']).toBe('image/jpeg');
    expect(low.body.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    expect((await decodeImage(low.body)).format).toBe('jpeg');
    expect(high.body.length).toBeGreaterThan(low.body.length * 2);
  });

  it('is a WebP when asked, and its quality changes its size', async () => {
    const account = await harness.newAccount();
    const noise = { url: url('/noise'), width: 640, height: 480, format: 'webp' };
    const low = await harness.shoot(account.apiKey, { ...noise, quality: 5 });
    const high = await harness.shoot(account.apiKey, { ...noise, quality: 90 });
    expect(low.headers['Content-Type']).toBe('image/webp');
    expect(low.body.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(low.body.subarray(8, 12).toString('latin1')).toBe('WEBP');
    expect((await decodeImage(low.body)).format).toBe('webp');
    expect(high.body.length).toBeGreaterThan(low.body.length * 2);
  });

  it('ignores quality for PNG', async () => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, {
      url: url('/red'),
      format: 'png',
      quality: 5,
      width: 320,
      height: 320,
    });
    expect(response.status).toBe(200);
    expect((await decodeImage(response.body)).format).toBe('png');
  });

  it.each([
    ['mobile', 390, 844, GREEN],
    ['tablet', 768, 1024, RED],
    ['desktop', 1920, 1080, RED],
  ] as const)(
    'uses the %s preset: its viewport, user agent and touch',
    async (device, width, height, color) => {
      const account = await harness.newAccount();
      const response = await harness.shoot(account.apiKey, {
        url: url('/device'),
        device,
        width: 500,
        height: 500,
      });
      const image = await decodeImage(response.body);
      expect([image.width, image.height]).toEqual([width, height]);
      expect(near(image.pixel(10, 10), color, 0)).toBe(true);
    },
  );

  it('waits the requested delay after load, so scripts can change the page', async () => {
    const account = await harness.newAccount();
    const now = await decodeImage(
      (await harness.shoot(account.apiKey, { url: url('/later'), width: 320, height: 320 })).body,
    );
    const later = await decodeImage(
      (await harness.shoot(account.apiKey, { url: url('/later'), width: 320, height: 320, delay: 1500 }))
        .body,
    );
    expect(near(now.pixel(100, 100), RED, 0)).toBe(true);
    expect(near(later.pixel(100, 100), BLUE, 0)).toBe(true);
  });

  it('captures the whole page with fullPage', async () => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, {
      url: url('/tall'),
      width: 800,
      height: 600,
      fullPage: true,
    });
    const image = await decodeImage(response.body);
    expect([image.width, image.height]).toEqual([800, 3000]);
    expect(near(image.pixel(400, 2950), BLUE, 0)).toBe(true);
    expect(response.headers['X-Screenshot-Truncated']).toBeUndefined();
  });

  // Red team (round 23): only `document.images` were waited for; a shadow root's lazy image came out unloaded.
  it.each([
    ['lazy images', '/lazy'],
    ["a web component's lazy images, in its shadow root,", '/lazy-shadow'],
  ])('loads %s before a full-page capture', async (_, path) => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, {
      url: url(path),
      width: 800,
      height: 600,
      fullPage: true,
    });
    const image = await decodeImage(response.body);
    expect(image.height).toBe(4000);
    expect(near(image.pixel(200, 3800), GREEN, 0)).toBe(true);
  });

  it.each([
    ['png', 16_384],
    ['webp', 16_383],
  ] as const)('cuts a %s full page at %i pixels and says so', async (format, cap) => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, {
      url: url('/huge'),
      width: 320,
      height: 320,
      fullPage: true,
      format,
    });
    expect(response.status).toBe(200);
    expect(response.headers['X-Screenshot-Truncated']).toBe('true');
    expect((await decodeImage(response.body)).height).toBe(cap);
  });

  // Chromium runs with software compositing (chromiumLaunch.ts): WebGL must still reach the image.
  it('renders WebGL and 2D canvases', async () => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, { url: url('/canvases'), width: 320, height: 320 });
    const image = await decodeImage(response.body);
    expect(image.pixel(50, 50)).toEqual(BLUE);
    expect(image.pixel(160, 50)).toEqual(GREEN);
    expect(image.pixel(300, 300)).toEqual(RED);
  });

  it('captures a page that answers with an HTTP error status as rendered', async () => {
    const account = await harness.newAccount();
    const response = await harness.shoot(account.apiKey, { url: url('/gone'), width: 320, height: 320 });
    expect(response.status).toBe(200);
    expect(near((await decodeImage(response.body)).pixel(300, 300), BLUE, 0)).toBe(true);
  });
});
