import type { Browser, HTTPRequest, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { SIGNED_LINK_INLINE_HIT_BYTES } from '../../shared/delivery/imageDelivery';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { noisePage, type PageServer, slowPage, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 20), what a new user hit in the dashboard (real Chromium against the whole local service, at
 * 1280x800 and 390x844). The `it`s run in order on one tab.
 */

const ACCOUNT = `usability-${Date.now().toString(36)}`;
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
/** A name of 100 characters without a space, as a hash or a long host name would be. */
const LONG_NAME = 'f'.repeat(36) + '0123456789abcdef'.repeat(4);
/** A page whose PNG at this size passes SIGNED_LINK_INLINE_HIT_BYTES: its cache hits are sent to the stored file. */
const NOISE_SIDE = 1_600;
/** Only combining marks: drawn as a tall stack over nothing. */
const MARKS_NAME = '\u0301'.repeat(60);

let pages: PageServer;
let service: TestLocalService;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** The capture requests the page sent. */
const captures: string[] = [];
/** How many times the page asked a signed link (each GET is a capture, charged and counted). */
let linkRequests = 0;
/** When set, GET /api/keys is answered with these keys (names the API may refuse, which the page must still bear). */
let listed: unknown[] | null = null;

beforeAll(async () => {
  pages = await startPageServer({
    '/hello': solidPage('#3366ff', '<title>Hello</title>', ''),
    '/noise': noisePage(NOISE_SIDE),
    ...slowPage(1_500),
  });
  [service, browser] = await Promise.all([
    startTestLocalService({ ALLOW_PRIVATE_HOSTS: pages.hostPort }),
    launchChromium().then((launched) => launched.browser),
  ]);
  page = await browser.newPage();
  await page.setViewport(DESKTOP);
  page.on('pageerror', (error) => problems.push(String(error)));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      problems.push(message.text());
  });
  await page.setRequestInterception(true);
  page.on('request', (request: HTTPRequest) => {
    const path = new URL(request.url()).pathname;
    if (path === '/api/screenshot' && request.method() === 'POST') captures.push(request.postData() ?? '');
    if (path === '/api/screenshot' && request.method() === 'GET') linkRequests += 1;
    if (path === '/api/keys' && request.method() === 'GET' && listed) {
      void request.respond({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({ keys: listed }),
      });
    } else void request.continue();
  });
});

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await pages?.close();
});

const text = (selector: string) => page.$eval(selector, (element) => element.textContent ?? '');
const waitText = (selector: string, pattern: RegExp, timeout = 30_000) =>
  page
    .waitForFunction(
      (s, source) => new RegExp(source).test(document.querySelector(s)?.textContent ?? ''),
      { timeout },
      selector,
      pattern.source,
    )
    .catch(async (error) => {
      const shown = await page.$eval(selector, (element) => element.textContent).catch(() => 'nothing');
      throw new Error(`${selector} never matched ${pattern}; it shows ${JSON.stringify(shown)}`, {
        cause: error,
      });
    });
const waitShown = (selector: string) =>
  page.waitForSelector(`${selector}:not([hidden])`, { visible: true, timeout: 30_000 });

async function fillIn(selector: string, value: string): Promise<void> {
  await page.$eval(selector, (element) => {
    (element as HTMLInputElement).value = '';
  });
  await page.type(selector, value);
}

async function createKey(name: string): Promise<void> {
  await fillIn('#key-name', name);
  await page.click('#create-key button[type=submit]');
  await waitShown('#new-key');
}

/** How far the page scrolls sideways, and whether every key row's buttons are on screen. */
const layout = () =>
  page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth,
    buttonsOnScreen: Array.from(document.querySelectorAll('#keys-body button')).every(
      (button) => button.getBoundingClientRect().right <= innerWidth,
    ),
    buttons: document.querySelectorAll('#keys-body button').length,
  }));

describe('the dashboard for a new user', () => {
  it('signs in and creates a key, with no empty box where the signed link will come', async () => {
    await page.goto(service.signInLink, { waitUntil: 'load' });
    await waitShown('#local-signin');
    await page.type('#account-id', ACCOUNT);
    await page.click('#local-signin button[type=submit]');
    await waitShown('#dashboard');
    await waitText('#balance', /^100$/);
    await createKey('first');
    // Red team (round 20): the empty code box showed as a small grey pill. Fixed: an empty .secret is not drawn.
    const box = await page.$eval('#signed-link', (element) => element.getBoundingClientRect().height);
    expect(box).toBe(0);
  });

  /**
   * Red team (round 20): a signed link to an address the API refuses showed only a broken image, no reason. Fixed:
   * when the preview fails, the page reads the link's answer and says why in text (web/public/app.js).
   */
  it('says in words why a signed link’s image did not load', async () => {
    const before = linkRequests;
    await fillIn('#link-url', 'http://10.1.2.3/');
    await page.click('#link-build');
    await waitText('#signed-link-error', /^The image did not load: .*url.*\(HTTP 400\)$/);
    expect(await page.$eval('#signed-link-preview', (image) => (image as HTMLElement).hidden)).toBe(true);
    // Red team (round 31): the page asked the link a second time to read why it failed, a second capture (charged
    // when that one succeeded, while the page said the image had not loaded). Fixed: it asks once, and reads that.
    expect(linkRequests - before).toBe(1);
  });

  /**
   * Red team (round 20): the balance was read as the link was shown, before its capture was charged, so it still
   * said 100. Fixed: it is read again once the preview has loaded.
   */
  it('shows the balance the signed link’s capture left, without Refresh', async () => {
    const before = linkRequests;
    await fillIn('#link-url', `${pages.origin}/hello`);
    await page.click('#link-build');
    await page.waitForFunction(
      () => (document.getElementById('signed-link-preview') as HTMLImageElement).naturalWidth > 0,
      { timeout: 30_000 },
    );
    await waitText('#balance', /^99$/, 10_000);
    expect(linkRequests - before).toBe(1);
  });

  /** Review (round 31): read by the page, the link asked twice while loading was two captures (an <img> asks once). */
  it('asks a link once when Build is pressed again while it loads', async () => {
    const before = linkRequests;
    await fillIn('#link-url', `${pages.origin}/slow`);
    await page.click('#link-build');
    await page.click('#link-build');
    await page.waitForFunction(
      () => (document.getElementById('signed-link-preview') as HTMLImageElement).naturalWidth > 0,
      { timeout: 30_000 },
    );
    expect(linkRequests - before).toBe(1);
  });

  /**
   * Review (round 31): a large cache hit is a redirect to the stored file, another origin the page may show but not
   * read, so the page's own read of the link failed on it. Fixed: the preview's <img> follows it.
   */
  it('shows a large image whose cache hit sends it to the stored file', async () => {
    await fillIn('#link-url', `${pages.origin}/noise`);
    await fillIn('#link-width', String(NOISE_SIDE));
    await fillIn('#link-height', String(NOISE_SIDE));
    const shown = () =>
      page.waitForFunction(
        (side) => (document.getElementById('signed-link-preview') as HTMLImageElement).naturalWidth === side,
        { timeout: 60_000 },
        NOISE_SIDE,
      );
    await page.click('#link-build');
    await shown();
    // The same link again: a hit.
    const redirected = page.waitForResponse((response) => response.status() === 302, { timeout: 60_000 });
    await page.click('#link-build');
    await redirected;
    await shown();
    expect(await text('#signed-link-error')).toBe('');
    expect(SIGNED_LINK_INLINE_HIT_BYTES).toBeLessThan(NOISE_SIDE * NOISE_SIDE * 3);
  }, 120_000);

  /**
   * Red team (round 20): "Try a capture" with neither URL nor HTML sent the request and showed the API's raw 400
   * (counted as a failed request), and the success notice at the top stayed for the rest of the visit. Fixed: the
   * form says what it needs without a request, and each action clears the last notice.
   */
  it('asks for a URL or HTML before capturing, and clears the previous notice', async () => {
    await page.click('#dismiss-key');
    await createKey('second');
    await page.click('#dismiss-key');
    // The list is drawn again once it has the new key (CI, loaded: a click on the row it replaced failed, detached).
    await page.waitForFunction(() =>
      document.querySelector('#keys-body tr')?.textContent?.includes('second'),
    );
    await page.locator('#keys-body tr button.secondary').click();
    await page.waitForSelector('#confirm[open]');
    await page.click('#confirm-ok');
    await waitText('#notice', /^Key “second” revoked\.$/);
    await fillIn('#try-url', '');
    await page.click('#try-submit');
    await waitText('#try-error', /^Enter a page URL or your own HTML to capture\.$/, 5_000);
    expect(captures).toEqual([]);
    expect(await text('#notice')).toBe('');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('try-url');
  });

  /**
   * Red team (round 20): a 100-character name without a space widened the page to 2174 px (1525 px on a phone),
   * Revoke and Delete off screen; a name of combining marks drew a streak over the rows above. Fixed: a name wraps
   * anywhere in its cell and is cut at the cell's edge (web/public/style.css `td.name`).
   */
  it('keeps a long name without spaces inside the page, at desktop and phone widths', async () => {
    const now = Date.now();
    const key = (id: string, name: string) => ({
      id,
      name,
      key: `sk_live_...${id.slice(-4)}`,
      isActive: true,
      createdAt: now,
      lastUsed: null,
    });
    listed = [
      key('key_aaaaaaaaaaaaaaaaaaaaaaaa01', 'production server'),
      key('key_aaaaaaaaaaaaaaaaaaaaaaaa02', MARKS_NAME),
      key('key_aaaaaaaaaaaaaaaaaaaaaaaa03', LONG_NAME),
    ];
    await page.click('#refresh');
    await page.waitForFunction(() => document.querySelectorAll('#keys-body tr').length === 3);
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewport(viewport);
      // Polled: the page lays itself out again a moment after the viewport changes (once measured at the old width).
      await expect.poll(layout, { message: `at ${viewport.width} wide`, timeout: 5_000 }).toEqual({
        scrollWidth: viewport.width,
        innerWidth: viewport.width,
        buttonsOnScreen: true,
        buttons: 6,
      });
    }
    // The confirmation names the key: its long name wraps inside the dialog too.
    await page.click('#keys-body tr:last-child button.secondary');
    await page.waitForSelector('#confirm[open]');
    const dialog = await page.$eval('#confirm', (element) => ({
      scrollWidth: element.scrollWidth,
      clientWidth: element.clientWidth,
      right: element.getBoundingClientRect().right,
    }));
    expect(dialog.scrollWidth).toBe(dialog.clientWidth);
    expect(dialog.right).toBeLessThanOrEqual(PHONE.width);
    await page.click('#confirm button[value=cancel]');
    await page.waitForSelector('#confirm:not([open])');
  });

  it('does not let a name of combining marks draw over the row above it', async () => {
    await page.setViewport(DESKTOP);
    await page.$eval('#keys-table', (table) => table.scrollIntoView({ block: 'center' }));
    const rowAbove = async () => {
      const row = await page.$('#keys-body tr:first-child');
      if (!row) throw new Error('no first row');
      return Buffer.from(await row.screenshot());
    };
    const withMarks = await rowAbove();
    await page.$eval('#keys-body tr:nth-child(2) td', (cell) => {
      cell.textContent = 'x';
    });
    expect((await rowAbove()).equals(withMarks)).toBe(true);
    listed = null;
  });

  /**
   * Red team (round 28, accessibility): white on the dark theme's accent was 2.69:1, field edges 1.45:1, the yellow
   * focus ring 1.6:1 on white; and a form's focused control, disabled while its request ran, left the keyboard at
   * the top of the page.
   */
  it('keeps text, field edges and the focus ring in contrast, in both themes', async () => {
    for (const scheme of ['light', 'dark']) {
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
      const ratios = await page.evaluate(() => {
        // `rgb(r, g, b)` as computed, or `#rrggbb` as the custom properties are written.
        const rgb = (colour: string) =>
          colour.startsWith('#')
            ? [1, 3, 5].map((at) => Number.parseInt(colour.slice(at, at + 2), 16))
            : (colour.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
        const luminance = (colour: string) => {
          const [r = 0, g = 0, b = 0] = rgb(colour).map((c) => {
            const v = c / 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
          });
          return 0.2126 * r + 0.7152 * g + 0.0722 * b;
        };
        const ratio = (a: string, b: string) => {
          const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
          return ((light ?? 0) + 0.05) / ((dark ?? 0) + 0.05);
        };
        const page = getComputedStyle(document.body).backgroundColor;
        const button = getComputedStyle(document.getElementById('try-submit') as Element);
        const field = getComputedStyle(document.getElementById('try-url') as Element);
        const root = getComputedStyle(document.documentElement);
        return {
          button: ratio(button.color, button.backgroundColor),
          placeholder: ratio(
            getComputedStyle(document.getElementById('try-url') as Element, '::placeholder').color,
            page,
          ),
          field: ratio(field.borderTopColor, page),
          // The ring is the yellow outline with a dark edge around it: the better of the two against the page.
          focus: Math.max(
            ratio(root.getPropertyValue('--focus').trim(), page),
            ratio(root.getPropertyValue('--focus-edge').trim(), page),
          ),
        };
      });
      expect(ratios.button, scheme).toBeGreaterThanOrEqual(4.5);
      expect(ratios.field, scheme).toBeGreaterThanOrEqual(3);
      expect(ratios.placeholder, scheme).toBeGreaterThanOrEqual(4.5);
      expect(ratios.focus, scheme).toBeGreaterThanOrEqual(3);
    }
    await page.emulateMediaFeatures([]);
  });

  it('says a few minutes ahead when the session ends (red team, round 28: the next action signed out unwarned)', async () => {
    expect(await text('#session-warning')).toBe('');
    await page.evaluate(() => {
      const stored = JSON.parse(sessionStorage.getItem('dashboard.session') ?? '{}');
      sessionStorage.setItem(
        'dashboard.session',
        JSON.stringify({ ...stored, expiresAt: Date.now() + 2 * 60_000 }),
      );
    });
    await page.reload();
    await waitText(
      '#session-warning',
      /^Your session ends at .+\. To keep working, sign out and sign in again/,
    );
    expect(await page.$eval('#session-warning', (element) => element.getAttribute('role'))).toBe('alert');
  });

  it('leaves the keyboard where it was after a capture from the keyboard, and at the sign-in form after signing out', async () => {
    // A key of its own in the form (the one there was revoked above).
    await createKey('keyboard');
    await page.click('#dismiss-key');
    await fillIn('#try-url', `${pages.origin}/hello`);
    await page.focus('#try-submit');
    await page.keyboard.press('Enter');
    await waitText('#try-status', /^Captured\./);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('try-submit');
    await page.focus('#sign-out');
    await page.keyboard.press('Enter');
    await waitShown('#local-signin');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('account-id');
    expect(await text('#session-warning')).toBe('');
  });

  it('ran without a script error or a Content-Security-Policy violation', () => {
    expect(problems).toEqual([]);
  });
});
