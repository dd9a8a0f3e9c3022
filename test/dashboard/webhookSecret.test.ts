import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * The dashboard's webhook-secret panel in real Chromium against the whole local service: one owner's visit, the
 * `it`s in order on one page. The secret stays hidden (not even fetched) until asked for.
 */

const ACCOUNT = `webhooks-${Date.now().toString(36)}`;
let service: TestLocalService;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** Paths of the API calls the page made. */
const calls: string[] = [];
let revealed = '';

beforeAll(async () => {
  [service, browser] = await Promise.all([
    startTestLocalService(),
    launchChromium().then((launched) => launched.browser),
  ]);
  page = await browser.newPage();
  await page.setViewport({ width: 390, height: 844 });
  page.on('pageerror', (error) => problems.push(String(error)));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      problems.push(message.text());
  });
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith('/api/')) calls.push(`${request.method()} ${url.pathname}`);
  });
});

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

const text = (selector: string) => page.$eval(selector, (element) => element.textContent ?? '');
const isShown = (selector: string) =>
  page.$eval(selector, (element) => !(element as HTMLElement).closest('[hidden]'));
const waitText = (selector: string, pattern: RegExp) =>
  page.waitForFunction(
    (s, source) => new RegExp(source).test(document.querySelector(s)?.textContent ?? ''),
    { timeout: 30_000 },
    selector,
    pattern.source,
  );

/** The account's secret as the API answers it to the page's own session token. */
async function secretFromApi(): Promise<string> {
  const token = await page.evaluate(
    () => JSON.parse(sessionStorage.getItem('dashboard.session') ?? '{}').token,
  );
  return (await (await service.request('/api/webhook-secret', { bearer: token })).json()).secret;
}

describe('the webhook secret in the dashboard', () => {
  it('is hidden after sign-in, and not even fetched', async () => {
    await page.goto(service.signInLink, { waitUntil: 'load' });
    await page.waitForSelector('#local-signin:not([hidden])', { timeout: 30_000 });
    await page.type('#account-id', ACCOUNT);
    await page.click('#local-signin button[type=submit]');
    await page.waitForSelector('#dashboard:not([hidden])', { timeout: 30_000 });
    await waitText('#balance', /^\d+$/);
    expect(await isShown('#webhook-secret-reveal')).toBe(true);
    expect(await isShown('#webhook-secret-value')).toBe(false);
    expect(await text('#webhook-secret-value')).toBe('');
    expect(calls.filter((call) => call.includes('webhook-secret'))).toEqual([]);
  });

  it('reveals the secret deliveries are signed with, and hides it again', async () => {
    await page.click('#webhook-secret-reveal');
    await waitText('#webhook-secret-value', /^whsec_/);
    revealed = await text('#webhook-secret-value');
    expect(revealed).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await isShown('#webhook-secret-value')).toBe(true);
    expect(await secretFromApi()).toBe(revealed);
    expect(await page.$eval('#webhook-secret-reveal', (b) => b.getAttribute('aria-expanded'))).toBe('true');

    await page.click('#webhook-secret-reveal');
    expect(await isShown('#webhook-secret-value')).toBe(false);
    expect(await text('#webhook-secret-value')).toBe('');
  });

  it('copies the secret, or selects it where the clipboard is refused', async () => {
    await browser
      .defaultBrowserContext()
      .overridePermissions(service.url, ['clipboard-read', 'clipboard-write']);
    await page.click('#webhook-secret-copy');
    await waitText('#webhook-secret-status', /copied|selected/);
    const copied = await page.evaluate(async () =>
      /copied/.test(document.getElementById('webhook-secret-status')?.textContent ?? '')
        ? navigator.clipboard.readText()
        : String(getSelection()),
    );
    expect(copied).toBe(revealed);
  });

  it('asks before rotating, and keeps the secret when the user cancels', async () => {
    await page.click('#webhook-secret-rotate');
    await page.waitForSelector('#confirm[open]');
    expect(await text('#confirm-title')).toBe('Rotate the webhook secret?');
    expect(await text('#confirm-text')).toMatch(/24 hours/);
    await page.click('#confirm button[value=cancel]');
    await page.waitForSelector('#confirm:not([open])');
    expect(calls).not.toContain('POST /api/webhook-secret/rotate');
    expect(await secretFromApi()).toBe(revealed);
  });

  it('rotates after confirmation and shows the new secret, which the API now answers', async () => {
    await page.click('#webhook-secret-rotate');
    await page.waitForSelector('#confirm[open]');
    await page.click('#confirm-ok');
    await waitText('#webhook-secret-status', /Rotated/);
    const rotated = await text('#webhook-secret-value');
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(revealed);
    expect(await secretFromApi()).toBe(rotated);
    expect(await text('#webhook-secret-status')).toMatch(/24 hours/);
  });

  it('forgets the secret on sign-out', async () => {
    await page.click('#sign-out');
    await page.waitForSelector('#local-signin:not([hidden])', { timeout: 30_000 });
    expect(await text('#webhook-secret-value')).toBe('');
    expect(await text('#webhook-secret-status')).toBe('');
  });

  it('ran without a script error or a Content-Security-Policy violation', () => {
    expect(problems).toEqual([]);
  });
});
