import type { Browser, HTTPRequest, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 20): after Sign out, the previous account's key list (names, masked keys, times), its balance,
 * the try-it form's URL and HTML and the signed-link form stayed in the page; the next account signed in in the
 * same tab saw those rows while its own list loaded, for good when that load failed (with live Revoke/Delete
 * buttons), and an answer to the previous account's request that came back late was drawn under the new one.
 * Fixed: signing out clears everything the page shows of the account (web/public/app.js `clearAccount`), and a
 * session-token answer that comes back after its session was signed out or replaced is dropped (`withSession`).
 *
 * Real Chromium against the whole local service; the `it`s run in order on one tab, as one shared browser would.
 */

const ALICE = `alice-${Date.now().toString(36)}`;
const BOB = `bob-${Date.now().toString(36)}`;
const KEY_NAME = 'alice-secret-project';
const HTML_MARK = '<h1>alice-private-draft</h1>';

let pages: PageServer;
let service: TestLocalService;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** What Alice's visit left that must not outlive it: her key's name, its masked value, her URL, her secrets. */
const traces: string[] = [KEY_NAME, HTML_MARK];
/** How GET /api/keys is answered: passed on, held (the request kept here), or failed like a store hiccup. */
let keysMode: 'pass' | 'hold' | 'abort' = 'pass';
let held: HTTPRequest | null = null;

beforeAll(async () => {
  pages = await startPageServer({ '/alice-page': solidPage('#3366ff', '<title>Alice</title>', '') });
  [service, browser] = await Promise.all([
    startTestLocalService({ ALLOW_PRIVATE_HOSTS: pages.hostPort }),
    launchChromium().then((launched) => launched.browser),
  ]);
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  page.on('pageerror', (error) => problems.push(String(error)));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      problems.push(message.text());
  });
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    const listing = request.method() === 'GET' && new URL(request.url()).pathname === '/api/keys';
    if (listing && keysMode === 'hold' && !held) held = request;
    else if (listing && keysMode === 'abort') void request.abort('failed');
    else void request.continue();
  });
});

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await pages?.close();
});

const text = (selector: string) => page.$eval(selector, (element) => element.textContent ?? '');
const waitText = (selector: string, pattern: RegExp) =>
  page.waitForFunction(
    (s, source) => new RegExp(source).test(document.querySelector(s)?.textContent ?? ''),
    { timeout: 30_000 },
    selector,
    pattern.source,
  );
const waitShown = (selector: string) =>
  page.waitForSelector(`${selector}:not([hidden])`, { visible: true, timeout: 30_000 });

/** Everything the page holds: its markup and the values of its fields (which the markup does not show). */
const pageContents = () =>
  page.evaluate(() =>
    [
      document.documentElement.outerHTML,
      ...Array.from(
        document.querySelectorAll('input, textarea'),
        (field) => (field as HTMLInputElement).value,
      ),
    ].join('\n'),
  );

async function signIn(account: string): Promise<void> {
  await page.type('#account-id', account);
  await page.click('#local-signin button[type=submit]');
  await waitShown('#dashboard');
}

describe('signing out, then in as another account in the same tab', () => {
  it('Alice signs in, creates a key, builds a link, captures and reveals her webhook secret', async () => {
    await page.goto(service.signInLink, { waitUntil: 'load' });
    await waitShown('#local-signin');
    await signIn(ALICE);
    await page.type('#key-name', KEY_NAME);
    await page.click('#create-key button[type=submit]');
    await waitShown('#new-key');
    const fullKey = await text('#new-key-value');
    traces.push(`sk_live_...${fullKey.slice(-4)}`, fullKey, await text('#new-key-secret'));

    await page.type('#link-url', `${pages.origin}/alice-page`);
    await page.click('#link-build');
    await waitText('#signed-link', /signature=/);
    traces.push(await text('#signed-link'));
    await page.waitForFunction(
      () => (document.getElementById('signed-link-preview') as HTMLImageElement).naturalWidth > 0,
      { timeout: 30_000 },
    );

    await page.type('#try-url', `${pages.origin}/alice-page`);
    await page.click('#try-submit');
    await waitShown('#result');
    await page.type('#try-html', HTML_MARK);
    traces.push(`${pages.origin}/alice-page`);

    await page.click('#webhook-secret-reveal');
    await waitText('#webhook-secret-value', /^whsec_/);
    traces.push(await text('#webhook-secret-value'));
    await waitText('#keys-body', new RegExp(KEY_NAME));
    await waitText('#balance', /^98$/);
  });

  it('leaves nothing of Alice in the page once she signs out, with her key list still loading', async () => {
    keysMode = 'hold';
    await page.click('#refresh');
    const until = Date.now() + 10_000;
    while (!held && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(held).not.toBeNull();

    await page.click('#sign-out');
    await waitShown('#local-signin');
    const contents = await pageContents();
    expect(traces.filter((trace) => contents.includes(trace))).toEqual([]);
    expect(await text('#balance')).toBe('–');
    expect(await text('#notice')).toBe('');
    expect(await page.$$eval('#keys-body tr, #usage-keys tr, #jobs-body tr', (rows) => rows.length)).toBe(0);
  });

  it("never shows Bob Alice's keys: neither when his list fails to load nor when her late answer comes", async () => {
    keysMode = 'abort';
    await signIn(BOB);
    await waitText('#keys-error', /^Keys could not be loaded/);
    // Alice's listing, held until now, is answered while Bob is signed in.
    const late = held as HTTPRequest | null;
    if (!late) throw new Error('no held request');
    await Promise.all([page.waitForResponse((response) => response.request() === late), late.continue()]);
    await waitText('#balance', /^100$/);
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 300)));

    expect(await text('#who-name')).toBe(`Signed in as ${BOB}`);
    const contents = await pageContents();
    expect(traces.filter((trace) => contents.includes(trace))).toEqual([]);
    expect(await page.$$eval('#keys-body tr', (rows) => rows.length)).toBe(0);
    expect(await text('#keys-error')).toMatch(/^Keys could not be loaded/);
  });

  it('ran without a script error or a Content-Security-Policy violation', () => {
    expect(problems).toEqual([]);
  });
});
