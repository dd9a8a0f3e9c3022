import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { extractFeaturesFromDOM } from '@ghostery/adblocker-content';
import { PuppeteerBlocker } from '@ghostery/adblocker-puppeteer';
import type { Frame, HTTPRequest, Page } from 'puppeteer-core';
import { getDomain } from 'tldts-experimental';
import { INTERCEPT_PRIORITY } from './requestHeaders';

/**
 * `blockAds`: Ghostery's filter engine, compiled from the filter lists that ship with the project
 * (shared/capture/filters/, rebuilt by `npm run filters:update`). Network filters abort matching requests before
 * they leave the browser; cosmetic filters hide matching elements in every frame, applied once the page has loaded
 * and before the capture, so the image never races the hiding.
 */

/** Where the serialized engine and its manifest live: beside this module, and beside the Lambda bundle. */
export const FILTER_DIR = fileURLToPath(new URL('./filters/', import.meta.url));
/** Gzipped: half the size in the function bundle, which shares Lambda's 250 MiB with the browser layer. */
export const ENGINE_FILE = 'engine.bin.gz';
export const MANIFEST_FILE = 'lists.json';

let engine: Promise<PuppeteerBlocker> | undefined;

/**
 * The engine, read, unzipped and deserialized once per warm process (about 150 ms), on the first capture that asks.
 */
export function filterEngine(): Promise<PuppeteerBlocker> {
  engine ??= readFile(`${FILTER_DIR}${ENGINE_FILE}`).then((zipped) => {
    const blocker = PuppeteerBlocker.deserialize(new Uint8Array(gunzipSync(zipped)));
    // Our header handler decides on the same requests: both continue at one priority, and a block wins over it.
    blocker.setRequestInterceptionPriority(INTERCEPT_PRIORITY);
    return blocker;
  });
  engine.catch(() => {
    engine = undefined;
  });
  return engine;
}

/** Network blocking for a fresh page, before it navigates. */
export async function blockAdRequests(page: Page): Promise<void> {
  const blocker = await filterEngine();
  // The wrapper is typed against puppeteer, which re-exports these very puppeteer-core classes.
  page.on('request', blocker.onRequest as unknown as (request: HTTPRequest) => void);
  await page.setRequestInterception(true);
}

/** Cosmetic filtering of every frame of a loaded page: the lists' rules for its host and for what its DOM holds. */
export async function hideAds(page: Page): Promise<void> {
  const blocker = await filterEngine();
  await Promise.all(page.frames().map((frame) => hideAdsInFrame(blocker, frame).catch(() => undefined)));
}

async function hideAdsInFrame(blocker: PuppeteerBlocker, frame: Frame): Promise<void> {
  const url = frame.url();
  if (!/^https?:/.test(url) || frame.detached) return;
  const hostname = new URL(url).hostname;
  const features = await frame.evaluate(extractFeaturesFromDOM);
  const { active, styles } = blocker.getCosmeticsFilters({
    url,
    hostname,
    domain: getDomain(hostname) ?? '',
    ...features,
    getBaseRules: true,
    getRulesFromHostname: true,
    getRulesFromDOM: true,
    // Scriptlets would run the lists' code in the page; extended selectors need the engine's own script.
    getInjectionRules: false,
    getExtendedRules: false,
  });
  if (!active || styles === '') return;
  // Adopted, not a <style> element: a page's Content-Security-Policy does not refuse it.
  await frame.evaluate((css: string) => {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  }, styles);
}
