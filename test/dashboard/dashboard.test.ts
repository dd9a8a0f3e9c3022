import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardConfig, dashboardRoutes } from '../../local/dashboardRoutes';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { vendorFiles } from '../../web/vendorFiles';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { postFromReboundName } from '../helpers/reboundRequest';

/**
 * The dashboard in real Chromium against the whole local service, on a phone-sized screen: one account owner's
 * visit from sign-in to sign-out, then the deployed (Cognito) sign-in against a stand-in provider. The `it`s of a
 * describe run in order and share the page, as a user's visit would.
 */

const ACCOUNT = `dashboard-${Date.now().toString(36)}`;
const PHONE = { width: 390, height: 844 };

let pages: PageServer;
let service: TestLocalService;
let browser: Browser;
let page: Page;
/** Console errors and uncaught exceptions, CSP violations included (not the 4xx answers the steps provoke). */
const problems: string[] = [];
let fullKey = '';
let signingSecret = '';

beforeAll(async () => {
  pages = await startPageServer({
    '/hello': solidPage('#3366ff', '<title>Hello</title>', '<h1>Hello</h1>'),
    '/card': solidPage(
      '#fff',
      '<style>@media (prefers-color-scheme: dark) { #card { background: #0f0 !important } }</style>',
      '<div id="card" style="width:150px;height:60px;background:#f00"></div>',
    ),
  });
  [service, browser] = await Promise.all([
    startTestLocalService({ ALLOW_PRIVATE_HOSTS: pages.hostPort }),
    launchChromium().then((launched) => launched.browser),
  ]);
  page = await openPage();
});

/** A phone-sized tab whose script errors and CSP violations are recorded. */
async function openPage(): Promise<Page> {
  const tab = await browser.newPage();
  await tab.setViewport(PHONE);
  tab.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      problems.push(message.text());
  });
  tab.on('pageerror', (error) => problems.push(String(error)));
  return tab;
}

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await pages?.close();
});

const text = (selector: string) => page.$eval(selector, (element) => element.textContent ?? '');
const isShown = (selector: string) =>
  page.$eval(selector, (element) => !(element as HTMLElement).closest('[hidden]'));
const waitShown = (selector: string) =>
  page.waitForFunction(
    (s) => document.querySelector(s)?.closest('[hidden]') === null,
    { timeout: 15_000 },
    selector,
  );
const waitText = (selector: string, pattern: RegExp) =>
  page
    .waitForFunction(
      (s, source) => new RegExp(source).test(document.querySelector(s)?.textContent ?? ''),
      { timeout: 30_000 },
      selector,
      pattern.source,
    )
    .catch(async (error) => {
      // Say what was there instead: a bare timeout tells nothing.
      const shown = await page.$eval(selector, (element) => element.textContent).catch(() => 'nothing');
      throw new Error(`${selector} never matched ${pattern}; it shows ${JSON.stringify(shown)}`, {
        cause: error,
      });
    });
/** The signed-in account's usage report, from the API itself. */
async function usageReport(): Promise<{
  days: { captures: number; failed: number; credits: number }[];
  byKey: { captures: number; credits: number }[];
}> {
  const token = await page.evaluate(
    () => JSON.parse(sessionStorage.getItem('dashboard.session') ?? '{}').token,
  );
  return (await service.request('/api/usage', { bearer: token })).json();
}

/** "3 captures, 0 failed requests, 2 credits", as the page words the days' totals. */
function summaryOf(days: { captures: number; failed: number; credits: number }[]): string {
  const sum = (field: 'captures' | 'failed' | 'credits') =>
    days.reduce((total, day) => total + day[field], 0);
  const count = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  return `${count(sum('captures'), 'capture')}, ${count(sum('failed'), 'failed request')}, ${count(sum('credits'), 'credit')}`;
}

const keyRows = () =>
  page.$$eval('#keys-body tr', (rows) =>
    rows.map((row) => Array.from(row.cells, (cell) => cell.textContent?.trim() ?? '')),
  );

/**
 * What uPlot drew on the usage chart's canvas: whether anything is there (axes, grid), and how many pixels have the
 * colour of the captures' bars.
 */
function chartPixels(): Promise<{ drawn: boolean; bars: number }> {
  return page.$eval('#usage-chart canvas', (element) => {
    const canvas = element as HTMLCanvasElement;
    const { data } = canvas.getContext('2d')?.getImageData(0, 0, canvas.width, canvas.height) ?? { data: [] };
    const bar = getComputedStyle(document.documentElement).getPropertyValue('--chart-captures').trim();
    const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(bar.slice(i, i + 2), 16));
    let drawn = false;
    let bars = 0;
    for (let i = 0; i < data.length; i += 4) {
      if ((data[i + 3] ?? 0) > 0) drawn = true;
      if (data[i] === r && data[i + 1] === g && data[i + 2] === b && data[i + 3] === 255) bars++;
    }
    return { drawn, bars };
  });
}

async function fillIn(selector: string, value: string): Promise<void> {
  await page.$eval(selector, (element) => {
    (element as HTMLInputElement).value = '';
  });
  await page.type(selector, value);
}

describe('the dashboard files on the local server', () => {
  it('serves the page at / as HTML under a Content-Security-Policy without inline scripts or styles', async () => {
    const response = await service.request('/');
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe');
    // Images from the page itself and from the local S3 API, where a signed link's large cached image redirects.
    const imageSource = /img-src 'self' blob: (http:\/\/127\.0\.0\.1:\d+);/.exec(csp)?.[1];
    expect(imageSource).toBeDefined();
    expect(imageSource).not.toBe(new URL(service.url).origin);
    expect(await response.text()).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|\sstyle=|\son\w+=/i);
  });

  it.each([
    ['/app.js', 'text/javascript; charset=utf-8'],
    ['/session.js', 'text/javascript; charset=utf-8'],
    ['/style.css', 'text/css; charset=utf-8'],
    ['/config.json', 'application/json; charset=utf-8'],
  ])('serves %s as %s with nosniff', async (path, type) => {
    const response = await service.request(path);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(type);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it.each(vendorFiles().map(({ name, path }) => [name, path]))(
    'serves /%s from the pinned npm package (%s)',
    async (name, path) => {
      const response = await service.request(`/${name}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(Buffer.from(await response.arrayBuffer()).equals(await readFile(path))).toBe(true);
    },
  );

  it('tells the page to use the local sign-in', async () => {
    expect(await (await service.request('/config.json')).json()).toEqual({ mode: 'local' });
  });

  it('does not serve files outside the dashboard directory', async () => {
    for (const path of [
      '/../package.json',
      '/%2e%2e/package.json',
      '/localRoutes.ts',
      '/securityHeaders.ts',
    ]) {
      expect((await service.request(path)).status).toBe(404);
    }
  });
});

describe('the page’s controls', () => {
  /** Red team (round 28, accessibility): four buttons named "Copy" and two fields "Page URL" (WCAG 2.4.6). */
  it('name every button and field apart, for whoever hears them rather than sees them', async () => {
    const html = await readFile(
      fileURLToPath(new URL('../../web/public/index.html', import.meta.url)),
      'utf8',
    );
    const buttons = [...html.matchAll(/<button\b([^>]*)>([^<]*)</g)].map(
      ([, attributes = '', text = '']) => /aria-label="([^"]+)"/.exec(attributes)?.[1] ?? text.trim(),
    );
    const labels = [...html.matchAll(/<label for="[^"]+">([^<]+)</g)].map(([, text = '']) => text.trim());
    for (const names of [buttons.filter((name) => name.startsWith('Copy')), labels])
      expect(new Set(names).size).toBe(names.length);
    expect(buttons.filter((name) => name.startsWith('Copy')).length).toBeGreaterThanOrEqual(4);
  });
});

describe('the local sign-in route', () => {
  const signInKey = () => new URL(service.signInLink).hash.replace('#sign-in=', '');
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${service.url}/local/session`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Sign-In-Key': signInKey(), ...headers },
      body: JSON.stringify(body),
    });

  it("refuses 401 without this start's sign-in key, or with another", async () => {
    for (const key of ['', 'A'.repeat(43), `${signInKey()}x`]) {
      const response = await post({ accountId: 'x' }, { 'X-Sign-In-Key': key });
      expect(response.status).toBe(401);
      expect((await response.json()).message).toMatch(/sign-in link npm start printed/);
    }
    expect(signInKey()).toMatch(/^[\w-]{43}$/);
  });

  it('mints a session token the API accepts for that account', async () => {
    const response = await post({ accountId: 'session-route-user' });
    expect(response.headers.get('cache-control')).toBe('no-store');
    const { token } = (await response.json()) as { token: string };
    expect((await service.request('/api/credits', { bearer: token })).status).toBe(200);
  });

  it('refuses an empty account id with 400 and details', async () => {
    const response = await post({ accountId: '  ' });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      message: 'Invalid request body',
      details: [{ code: 'too_small', path: ['accountId'], message: 'Account id must not be empty' }],
    });
  });

  /** Red team (round 23): both were an `invalid_type` "expected object, received undefined", and said no-cache. */
  it('refuses an unparsable body and one over 4096 bytes naming why, as no-store JSON', async () => {
    const send = (body: string) =>
      fetch(`${service.url}/local/session`, {
        method: 'POST',
        headers: { 'X-Sign-In-Key': signInKey(), 'Content-Type': 'application/json' },
        body,
      });
    const unparsable = await send('{');
    expect(unparsable.status).toBe(400);
    expect(unparsable.headers.get('cache-control')).toBe('no-store');
    expect((await unparsable.json()).details).toEqual([
      { code: 'invalid_json', path: [], message: 'Request body is not valid JSON' },
    ]);
    const large = await send(JSON.stringify({ accountId: 'x', padding: 'p'.repeat(4_100) }));
    expect(large.status).toBe(400);
    expect((await large.json()).details).toEqual([
      { code: 'too_big', path: [], message: 'Request body is larger than 4096 bytes' },
    ]);
  });

  it('refuses a body that is not JSON, so a cross-site form cannot use it', async () => {
    const response = await fetch(`${service.url}/local/session`, {
      method: 'POST',
      headers: { 'X-Sign-In-Key': signInKey() },
      body: 'accountId=x',
    });
    expect(response.status).toBe(415);
  });

  it('tells a browser that never opened the sign-in link where the key is', async () => {
    const context = await browser.createBrowserContext();
    try {
      const stranger = await context.newPage();
      await stranger.goto(service.url, { waitUntil: 'load' });
      await stranger.waitForSelector('#account-id', { visible: true });
      // Said before any try.
      expect(await stranger.$eval('#signin-error', (element) => element.textContent)).toMatch(
        /sign-in link npm start printed/,
      );
      await stranger.type('#account-id', 'someone');
      await stranger.click('#local-signin button[type=submit]');
      await stranger.waitForFunction(
        () =>
          /sign-in link npm start printed/.test(document.getElementById('signin-error')?.textContent ?? ''),
        { timeout: 15_000 },
      );
      expect(await stranger.$eval('#dashboard', (element) => (element as HTMLElement).hidden)).toBe(true);
      // Red team (round 27): the link then opened in the same tab, a change of its fragment alone, is taken too.
      await stranger.goto(service.signInLink);
      await stranger.waitForFunction(() => document.getElementById('signin-error')?.textContent === '');
      expect(stranger.url()).toBe(`${service.url}/`);
      await stranger.click('#local-signin button[type=submit]');
      await stranger.waitForSelector('#dashboard', { visible: true, timeout: 15_000 });
    } finally {
      await context.close();
    }
  });

  it('refuses a request from another origin', async () => {
    expect((await post({ accountId: 'x' }, { Origin: 'https://evil.example' })).status).toBe(403);
  });

  it('refuses a foreign Host header (DNS rebinding)', async () => {
    const status = await postFromReboundName(new URL(service.url).port, '/local/session', 'evil.example', {
      accountId: 'x',
    });
    expect(status).toBe(403);
  });
});

describe('an account owner in the dashboard', () => {
  it('signs in with an account id and sees the credit balance', async () => {
    await page.goto(service.signInLink, { waitUntil: 'load' });
    await waitShown('#local-signin');
    // The key is kept by the page, out of the address bar and the history.
    expect(page.url()).toBe(`${service.url}/`);
    await fillIn('#account-id', ACCOUNT);
    await page.click('#local-signin button[type=submit]');
    await waitShown('#dashboard');
    expect(await text('#who-name')).toContain(ACCOUNT);
    await waitText('#balance', /^100$/);
  });

  it('shows an empty usage history for the new account: 30 idle days charted, no keys', async () => {
    await waitText('#usage-summary', /^Last 30 days: 0 captures, 0 failed requests, 0 credits\.$/);
    expect(await page.$$eval('#usage-days tr', (rows) => rows.length)).toBe(30);
    expect(await isShown('#usage-no-keys')).toBe(true);
    expect(await isShown('#usage-keys-table')).toBe(false);
    // The chart's library loads on first use, after the figures are shown: its readout comes with the chart (on a
    // loaded CI the figures were there and the readout still empty).
    const today = new Date().toISOString().slice(0, 10);
    await waitText('#usage-readout', new RegExp(`^${today}: 0 captures, 0 credits$`));
    expect(await chartPixels()).toEqual({ drawn: true, bars: 0 });
  });

  it('keeps the session token in session storage, out of the URL, cookies and local storage', async () => {
    const stored = await page.evaluate(() => ({
      session: sessionStorage.getItem('dashboard.session'),
      // The sign-in key of this start, for this tab only: nothing in the origin's lasting storage.
      signInKey: sessionStorage.getItem('dashboard.localSignInKey'),
      local: localStorage.length,
      cookies: document.cookie,
    }));
    const token = JSON.parse(stored.session ?? '{}').token as string;
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(page.url()).toBe(`${service.url}/`);
    expect(stored.signInKey).toBe(new URL(service.signInLink).hash.replace('#sign-in=', ''));
    expect(stored.local).toBe(0);
    expect(stored.cookies).toBe('');
  });

  it('shows the API validation message in words for a blank key name', async () => {
    await fillIn('#key-name', '   ');
    await page.click('#create-key button[type=submit]');
    await waitText('#keys-error', /name must not be empty/);
    expect(await keyRows()).toEqual([]);
  });

  it('creates a key and shows its full value once, with a copy button', async () => {
    await fillIn('#key-name', 'phone test');
    await page.click('#create-key button[type=submit]');
    await waitShown('#new-key');
    fullKey = await text('#new-key-value');
    expect(fullKey).toMatch(/^sk_live_[0-9a-f]{40}$/);
    // Each secret with its own copy button beside it (new-user walkthrough: one button, far below the key).
    expect(await isShown('#copy-key')).toBe(true);
    expect(await isShown('#copy-secret')).toBe(true);
    expect(await isShown('#copy-link')).toBe(false);
    const beside = await page.$eval(
      '#copy-key',
      (button) => button.parentElement?.querySelector('#new-key-value') !== null,
    );
    expect(beside).toBe(true);
  });

  it('shows the signing secret once and builds a signed link whose image loads on the page', async () => {
    signingSecret = await text('#new-key-secret');
    expect(signingSecret).toMatch(/^ss_live_[0-9a-f]{64}$/);
    await fillIn('#link-url', `${pages.origin}/hello`);
    await fillIn('#link-width', '800');
    await fillIn('#link-height', '600');
    await page.click('#link-build');
    await waitText('#signed-link', /signature=/);
    expect(await isShown('#copy-link')).toBe(true);
    const link = await text('#signed-link');
    expect(link.startsWith(`${service.url}/api/screenshot?`)).toBe(true);
    expect(link).not.toContain(signingSecret);
    const shown = await page.waitForFunction(
      () => {
        const image = document.getElementById('signed-link-preview') as HTMLImageElement;
        return (
          image.complete &&
          image.naturalWidth > 0 && { width: image.naturalWidth, height: image.naturalHeight }
        );
      },
      { timeout: 30_000 },
    );
    expect(await shown.jsonValue()).toEqual({ width: 800, height: 600 });
    // The page's HMAC (WebCrypto) is the service's: the same link is now a free cache hit, a changed one a 401.
    const again = await fetch(link);
    expect(again.status).toBe(200);
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect((await fetch(link.replace('width=800', 'width=801'))).status).toBe(401);
  });

  it('lists the new key masked, active and never used', async () => {
    await page.waitForFunction(() => document.querySelectorAll('#keys-body tr').length === 1);
    const [row] = await keyRows();
    expect(row?.slice(0, 5)).toEqual([
      'phone test',
      `sk_live_...${fullKey.slice(-4)}`,
      'Active',
      expect.stringMatching(/\d/),
      'Never',
    ]);
  });

  it('no longer shows the full key once it has been put away', async () => {
    await page.click('#dismiss-key');
    expect(await isShown('#new-key')).toBe(false);
    const html = await page.content();
    expect(html).not.toContain(fullKey);
    expect(html).not.toContain(signingSecret);
    expect(await isShown('#signed-link-preview')).toBe(false);
    expect(await page.$eval('#try-key', (input) => (input as HTMLInputElement).value)).toBe(fullKey);
  });

  it('captures a page and shows the image with its size in bytes and the credits it cost', async () => {
    await fillIn('#try-url', `${pages.origin}/hello`);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/screenshot')),
      page.click('#try-submit'),
    ]);
    const sentBytes = Number(response.headers()['content-length']);
    await waitShown('#result');
    const shown = await page.$eval('#result-image', async (element) => {
      const image = element as HTMLImageElement;
      await image.decode();
      return { width: image.naturalWidth, height: image.naturalHeight };
    });
    const caption = await text('#result-caption');
    expect(sentBytes).toBeGreaterThan(0);
    expect(shown).toEqual({ width: 1920, height: 1080 });
    expect(Number(caption.match(/^([\d.,\s\u202f]+) bytes/)?.[1]?.replace(/\D/g, ''))).toBe(sentBytes);
    expect(caption).toContain('image/png');
    expect(caption).toContain('1 credit charged');
    // 100 free credits, less the signed link's first load and this capture.
    await waitText('#balance', /^98$/);
    // The key's row is read again: it was used just now.
    await page.waitForFunction(
      () => document.querySelector('#keys-body tr td[data-label="Last used"] time') !== null,
    );
  });

  it('charts the captures with the numbers the API reports, and totals them under their key', async () => {
    // Three answers so far: the signed link's image (captured, then served again from the cache) and the try-it
    // capture. Their usage records are written just after the image was sent: the dashboard looks again later, with
    // no Refresh (red team, round 27: the figures stayed old until it was clicked).
    await page
      .waitForFunction(() => document.getElementById('usage-summary')?.dataset.captures === '3', {
        timeout: 20_000,
        polling: 500,
      })
      .catch(async (error) => {
        const shown = await text('#usage-summary');
        throw new Error(`the usage summary shows ${JSON.stringify(shown)}`, { cause: error });
      });
    const token = await page.evaluate(
      () => JSON.parse(sessionStorage.getItem('dashboard.session') ?? '{}').token,
    );
    const report = await (await service.request('/api/usage', { bearer: token })).json();
    const today = report.days.at(-1);
    expect(today).toMatchObject({ captures: 3, failed: 0, cacheHits: 1, credits: 2 });
    expect(await text('#usage-summary')).toBe('Last 30 days: 3 captures, 0 failed requests, 2 credits.');
    await waitText('#usage-readout', new RegExp(`^${today.date}: 3 captures, 2 credits$`));
    const [todayRow] = await page.$$eval('#usage-days tr', (rows) =>
      rows.map((row) => Array.from(row.cells, (cell) => cell.textContent)),
    );
    expect(todayRow).toEqual([today.date, '3', '0', '1', '2']);
    expect(await page.$$eval('#usage-keys tr', (rows) => rows.map((row) => row.textContent))).toEqual([
      'phone test32',
    ]);
    expect((await chartPixels()).bars).toBeGreaterThan(0);
  });

  it('reads out the day under the pointer on the chart', async () => {
    await page.$eval('#usage-chart', (chart) => chart.scrollIntoView({ block: 'center' }));
    const box = await (await page.$('#usage-chart .u-over'))?.boundingBox();
    if (!box) throw new Error('no chart plot area');
    await page.mouse.move(box.x + 2, box.y + box.height / 2);
    await waitText('#usage-readout', /: 0 captures, 0 credits$/);
    await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
    await waitText('#usage-readout', /: 3 captures, 2 credits$/);
  });

  it('captures one element at scale 2 in dark mode, ads, banners and chats blocked, from the form', async () => {
    await fillIn('#try-url', `${pages.origin}/card`);
    await fillIn('#try-selector', '#card');
    await page.select('#try-scale', '2');
    await page.click('#try-dark');
    await page.click('#try-ads');
    await page.click('#try-banners');
    await page.click('#try-chats');
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/screenshot')),
      page.click('#try-submit'),
    ]);
    expect(JSON.parse(response.request().postData() ?? '{}')).toMatchObject({
      selector: '#card',
      scale: 2,
      darkMode: true,
      blockAds: true,
      blockCookieBanners: true,
      blockChats: true,
    });
    // The caption of the capture before stays until the answer's body is read: wait for this one's (scale 2: 3 credits).
    await waitText('#result-caption', /image\/png · 3 credits charged$/);
    const shown = await page.$eval('#result-image', async (element) => {
      const image = element as HTMLImageElement;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.naturalWidth;
      canvas.height = image.naturalHeight;
      const context = canvas.getContext('2d');
      context?.drawImage(image, 0, 0);
      return {
        width: image.naturalWidth,
        height: image.naturalHeight,
        pixel: [...(context?.getImageData(5, 5, 1, 1).data ?? [])],
      };
    });
    expect(shown).toEqual({ width: 300, height: 120, pixel: [0, 255, 0, 255] });
    // Back to the plain form for the tests after this one.
    await fillIn('#try-selector', '');
    await page.select('#try-scale', '1');
    for (const box of ['#try-dark', '#try-ads', '#try-banners', '#try-chats']) await page.click(box);
  });

  it('prints your own HTML as a PDF from the form, with its paper, landscape and page numbers, as a download', async () => {
    expect(await page.$eval('#try-pdf', (element) => (element as HTMLElement).hidden)).toBe(true);
    const html = '<body style="background:#0f0"><h1>Invoice 42</h1></body>';
    await fillIn('#try-html', html);
    await page.select('#try-format', 'pdf');
    expect(await page.$eval('#try-pdf', (element) => (element as HTMLElement).hidden)).toBe(false);
    // What a PDF refuses (docs/api.md) cannot be chosen, and is not sent.
    const disabled = () =>
      Promise.all(
        ['#try-full', '#try-transparent', '#try-scale', '#try-selector'].map((id) =>
          page.$eval(id, (control) => (control as HTMLInputElement).disabled),
        ),
      );
    expect(await disabled()).toEqual([true, true, true, true]);
    await page.select('#try-paper', 'Letter');
    await page.click('#try-landscape');
    await page.click('#try-page-numbers');
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/screenshot')),
      page.click('#try-submit'),
    ]);
    const sent = JSON.parse(response.request().postData() ?? '{}');
    expect(sent).toMatchObject({
      html,
      format: 'pdf',
      pdfPaperFormat: 'Letter',
      pdfLandscape: true,
      pdfFooterTemplate: expect.stringContaining('class="pageNumber"'),
    });
    expect(sent.url).toBeUndefined();
    expect(sent.fullPage).toBeUndefined();
    expect(response.headers()['content-type']).toBe('application/pdf');
    // The caption of the capture before stays until the answer's body is read: wait for this one's.
    await waitText('#result-caption', /application\/pdf · 2 credits charged$/);
    const shown = await page.$eval('#result', (figure) => ({
      image: (figure.querySelector('#result-image') as HTMLElement).hidden,
      download: (figure.querySelector('#result-download') as HTMLAnchorElement).hidden,
      href: (figure.querySelector('#result-download') as HTMLAnchorElement).href,
    }));
    expect(shown).toMatchObject({ image: true, download: false, href: expect.stringMatching(/^blob:/) });
    // Back to the plain form for the tests after this one.
    await fillIn('#try-html', '');
    for (const box of ['#try-landscape', '#try-page-numbers']) await page.click(box);
    // A JPEG has no transparency; PNG takes every option again.
    await page.select('#try-format', 'jpeg');
    expect(await disabled()).toEqual([false, true, false, false]);
    await page.select('#try-format', 'png');
    expect(await disabled()).toEqual([false, false, false, false]);
  });

  it('asks before revoking, and keeps the key when the user cancels', async () => {
    await page.click('#keys-body tr button.secondary');
    await page.waitForSelector('#confirm[open]');
    expect(await text('#confirm-title')).toBe('Revoke “phone test”?');
    await page.click('#confirm button[value=cancel]');
    await page.waitForSelector('#confirm:not([open])');
    expect((await keyRows())[0]?.[2]).toBe('Active');
  });

  it('revokes the key after confirmation', async () => {
    await page.click('#keys-body tr button.secondary');
    await page.waitForSelector('#confirm[open]');
    await page.click('#confirm-ok');
    await waitText('#keys-body', /Revoked/);
    expect(await text('#notice')).toBe('Key “phone test” revoked.');
  });

  it('then fails a capture with the revoked key with the 401 message', async () => {
    await page.click('#try-submit');
    await waitText('#try-error', /401/);
    expect(await text('#try-error')).toBe('API key has been revoked (HTTP 401)');
    expect(await isShown('#result')).toBe(false);
  });

  it('deletes the key after confirmation and drops it from the try-it form', async () => {
    await page.click('#keys-body tr button.danger');
    await page.waitForSelector('#confirm[open]');
    await page.click('#confirm-ok');
    await waitShown('#no-keys');
    expect(await keyRows()).toEqual([]);
    expect(await page.$eval('#try-key', (input) => (input as HTMLInputElement).value)).toBe('');
  });

  it('keeps the deleted key in the usage totals, named as deleted', async () => {
    await page.click('#refresh');
    // Later tests capture with other options (and costs): the page must show what the API reports now.
    const { byKey, days } = await usageReport();
    expect(byKey).toHaveLength(1);
    const { captures, credits } = byKey[0] ?? { captures: 0, credits: 0 };
    await waitText('#usage-keys', new RegExp(`^Deleted key \\(key_\\w+\\)${captures}${credits}$`));
    expect(await text('#usage-summary')).toBe(`Last 30 days: ${summaryOf(days)}.`);
  });

  it('shows the last 7 days when that period is chosen', async () => {
    await page.select('#usage-range', '7');
    const { days } = await usageReport();
    await waitText('#usage-summary', new RegExp(`^Last 7 days: ${summaryOf(days.slice(-7))}\\.$`));
    expect(await page.$$eval('#usage-days tr', (rows) => rows.length)).toBe(7);
  });

  it('lists the latest jobs with their status, a link to the result and the webhook outcome', async () => {
    const token = service.idp.mintToken(ACCOUNT);
    const key = await (await service.request('/api/keys', { bearer: token, body: { name: 'jobs' } })).json();
    // The page server answers the webhook 404: the outcome shown is a pending retry after one attempt.
    const accepted = await (
      await service.request('/api/screenshot', {
        bearer: key.key,
        body: { url: `${pages.origin}/hello`, async: true, webhookUrl: `${pages.origin}/hook` },
      })
    ).json();
    const until = Date.now() + 60_000;
    for (;;) {
      const job = await (await service.request(`/api/jobs/${accepted.id}`, { bearer: key.key })).json();
      if (job.status === 'succeeded' && job.webhook.attempts >= 1) break;
      if (Date.now() > until) throw new Error(`job not done: ${JSON.stringify(job)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await page.click('#refresh');
    const row = `#jobs-body tr[data-job-id="${accepted.id}"]`;
    await waitShown(row);
    expect(await page.$eval(row, (element) => (element as HTMLElement).dataset.status)).toBe('succeeded');
    expect(await text(`${row} td[data-label="Status"]`)).toBe('Succeeded');
    expect(await text(`${row} td[data-label="Webhook"]`)).toBe('Pending (1 attempt, last 404)');
    const link = await page.$eval(`${row} td[data-label="Result"] a`, (element) => ({
      href: (element as HTMLAnchorElement).href,
      rel: (element as HTMLAnchorElement).rel,
      text: element.textContent,
    }));
    expect(link).toMatchObject({ rel: 'noopener noreferrer', text: 'Result (image/png)' });
    const image = await fetch(link.href);
    expect(image.headers.get('content-type')).toBe('image/png');
  });

  it('fits a phone-sized screen without sideways scrolling', async () => {
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(PHONE.width);
  });

  it('keeps the usage table a table on a phone: one line a day, keys and jobs as cards', async () => {
    // Red team (round 27): as cards of five labelled lines, 30 days took 4,500 pixels of mostly zeros.
    await page.$eval('#usage-daily', (details) => {
      (details as HTMLDetailsElement).open = true;
    });
    const layout = await page.evaluate(() => ({
      days: [...document.querySelectorAll('#usage-days tr')].map((row) => ({
        display: getComputedStyle(row).display,
        height: row.getBoundingClientRect().height,
      })),
      keys: getComputedStyle(document.querySelector('#keys-body tr') as Element).display,
      width: document.documentElement.scrollWidth,
    }));
    expect(layout.days.length).toBeGreaterThanOrEqual(7);
    for (const day of layout.days) expect(day).toMatchObject({ display: 'table-row' });
    expect(Math.max(...layout.days.map((day) => day.height))).toBeLessThan(60);
    expect(layout.keys).toBe('block');
    expect(layout.width).toBeLessThanOrEqual(PHONE.width);
  });

  it('signs out and forgets the session', async () => {
    await page.click('#sign-out');
    await waitShown('#local-signin');
    // Only the sign-in key of this start stays, so that another account can sign in from this tab.
    expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(['dashboard.localSignInKey']);
    expect(await isShown('#dashboard')).toBe(false);
    // Nothing of the session stays for the next one: its messages, its account id.
    expect(await text('#notice')).toBe('');
    expect(await page.$eval('#account-id', (input) => (input as HTMLInputElement).value)).toBe('');
  });
});

describe('the hosted sign-in, as deployed (against a stand-in for Cognito)', () => {
  const CLIENT_ID = 'dashboard-client';
  let provider: PageServer;
  let site: Server;
  let siteUrl = '';
  let authorize = new URLSearchParams();
  let tokenRequests = 0;

  const readForm = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  };

  beforeAll(async () => {
    // Cognito's OAuth endpoints, as far as the page uses them: the token endpoint checks the PKCE verifier.
    provider = await startPageServer({
      '/oauth2/authorize': (req, res) => {
        authorize = new URL(req.url ?? '/', 'http://x').searchParams;
        const back = new URL(authorize.get('redirect_uri') ?? '');
        back.search = new URLSearchParams({
          code: 'one-time-code',
          state: authorize.get('state') ?? '',
        }).toString();
        res.writeHead(302, { Location: back.toString() }).end();
      },
      '/oauth2/token': async (req, res) => {
        tokenRequests += 1;
        const form = await readForm(req);
        const challenge = createHash('sha256')
          .update(form.get('code_verifier') ?? '')
          .digest('base64url');
        const valid =
          form.get('grant_type') === 'authorization_code' &&
          form.get('code') === 'one-time-code' &&
          form.get('client_id') === CLIENT_ID &&
          form.get('redirect_uri') === `${siteUrl}/` &&
          challenge === authorize.get('code_challenge');
        res.writeHead(valid ? 200 : 400, {
          'Content-Type': 'application/json',
          'Access-Control-Allow-Origin': siteUrl,
        });
        res.end(
          JSON.stringify(
            valid
              ? { access_token: service.idp.mintToken('hosted-user'), token_type: 'Bearer', expires_in: 3600 }
              : { error: 'invalid_grant' },
          ),
        );
      },
      '/logout': (req, res) => {
        const params = new URL(req.url ?? '/', 'http://x').searchParams;
        res.writeHead(302, { Location: params.get('logout_uri') ?? '/' }).end();
      },
    });

    // The dashboard with the Cognito config, and /api/* passed on to the local service: CloudFront's part.
    site = createServer();
    site.listen(0, '127.0.0.1');
    await once(site, 'listening');
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    const config: DashboardConfig = {
      mode: 'cognito',
      cognito: {
        domain: provider.origin,
        clientId: CLIENT_ID,
        redirectUri: `${siteUrl}/`,
        scope: 'openid email',
      },
    };
    // The hosted sign-in has no local sign-in route, so no key opens one.
    const routes = dashboardRoutes({ idp: service.idp, baseUrl: siteUrl, config, signInKey: 'unused' });
    site.on('request', async (req, res) => {
      for (const route of routes) if (await route(req, res)) return;
      if (!req.url?.startsWith('/api/')) return void res.writeHead(404).end();
      const body = await readForm(req);
      const upstream = await fetch(`${service.url}${req.url}`, {
        method: req.method ?? 'GET',
        headers: {
          authorization: req.headers.authorization ?? '',
          'content-type': req.headers['content-type'] ?? '',
        },
        ...(req.method === 'GET' ? {} : { body: body.toString() }),
      });
      res.writeHead(upstream.status, {
        'Content-Type': upstream.headers.get('content-type') ?? 'text/plain',
      });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    });
    page = await openPage();
  });

  afterAll(async () => {
    site?.closeAllConnections();
    await new Promise((resolve) => site?.close(resolve));
    await provider?.close();
  });

  it('offers the hosted sign-in instead of the account id form', async () => {
    await page.goto(siteUrl, { waitUntil: 'load' });
    await waitShown('#hosted-signin');
    expect(await isShown('#local-signin')).toBe(false);
  });

  it('signs in through the provider with PKCE and shows the account dashboard', async () => {
    await Promise.all([page.waitForNavigation(), page.click('#hosted-signin-button')]);
    await waitShown('#dashboard');
    expect(await text('#who-name')).toBe('Signed in as hosted-user');
    await waitText('#balance', /^100$/);
    expect(Object.fromEntries(authorize)).toEqual({
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: `${siteUrl}/`,
      scope: 'openid email',
      state: expect.stringMatching(/^[\w-]{22}$/),
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      code_challenge_method: 'S256',
    });
  });

  it('leaves neither the code nor the PKCE secrets behind', async () => {
    expect(page.url()).toBe(`${siteUrl}/`);
    expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(['dashboard.session']);
  });

  it('signs out through the provider and comes back signed out', async () => {
    await Promise.all([page.waitForNavigation(), page.click('#sign-out')]);
    await waitShown('#hosted-signin');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('does not act on a sign-in callback that this tab did not start', async () => {
    const before = tokenRequests;
    page = await openPage();
    await page.goto(`${siteUrl}/?code=one-time-code&state=forged`, { waitUntil: 'load' });
    await waitShown('#hosted-signin');
    expect(await text('#signin-error')).toBe('');
    expect(tokenRequests).toBe(before);
    expect(page.url()).toBe(`${siteUrl}/`);
  });
});

describe('every page of the visit', () => {
  it('ran without a script error or a Content-Security-Policy violation', () => {
    expect(problems).toEqual([]);
  });
});
