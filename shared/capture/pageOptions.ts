import type { Page } from 'puppeteer-core';
import { CaptureFailedError } from '../errors';
import { errorKind, hostOf, logger } from '../logger';
import { filterSetsOf, hideFiltered, type RequestBlocking, setRequestBlocking } from './adBlocking';
import { setCookieBannerBlocking, settleCookieBanners } from './consentBlocking';
import type { PageControl } from './pageControl';
import type { CaptureSpec } from './renderer';
import { sendHeadersToOrigin } from './requestHeaders';
import { hidingRule } from './selectorCheck';

/**
 * The capture options a page gets before it navigates and after it has loaded. Each capture has a page of its own in
 * a context of its own, so nothing set here is ever undone: the page and its context are closed after the capture.
 * Options a request does not use send no command at all.
 */

/** What a page was given before the capture that takes it was known (a spare page, prepared off the request path). */
export interface PreparedPage {
  /** The id of autoconsent's registered script, when the page has it. */
  consentScript?: string;
  /** Its network blocking (ads), when the page has it. */
  requestBlocking?: RequestBlocking;
}

/** What a capture switched on before navigation that still acts after load. */
export interface NavigationSetup {
  requestBlocking?: RequestBlocking;
}

/**
 * Before navigation: media type and features, time zone, cookies, extra headers, ad, chat and consent blocking
 * (undone when the page was prepared with it and the capture does not want it). The user agent and locale are the
 * page's emulation (chromiumRenderer.ts).
 */
export async function prepareNavigation(
  page: Page,
  spec: CaptureSpec,
  prepared: PreparedPage,
): Promise<NavigationSetup> {
  const mediaFeatures = [
    ...(spec.darkMode ? [{ name: 'prefers-color-scheme', value: 'dark' }] : []),
    ...(spec.reducedMotion ? [{ name: 'prefers-reduced-motion', value: 'reduce' }] : []),
  ];
  // Chromium lays a page out for the screen, and prints it for print: only another wish needs a media type.
  const mediaType = spec.mediaType !== (spec.format === 'pdf' ? 'print' : 'screen') ? spec.mediaType : '';
  const [requestBlocking] = await Promise.all([
    setRequestBlocking(page, filterSetsOf(spec), prepared.requestBlocking),
    mediaType !== '' || mediaFeatures.length > 0 ? emulateMedia(page, mediaType, mediaFeatures) : undefined,
    spec.timezone ? page.emulateTimezone(spec.timezone) : undefined,
    setCookies(page, spec),
    sendHeadersToOrigin(page, spec.url, spec.headers),
    setCookieBannerBlocking(page, spec.url, spec.blockCookieBanners, prepared.consentScript),
  ]);
  return requestBlocking ? { requestBlocking } : {};
}

/** The puppeteer navigation condition for `waitUntil`: networkidle0 is "no request for 500 ms" (NETWORK_IDLE_MS). */
export function navigationCondition(spec: CaptureSpec) {
  return spec.waitUntil === 'networkidle' ? ('networkidle0' as const) : spec.waitUntil;
}

/**
 * The media type ('' for the engine's own) and media features, in one command through a session of our own: a media
 * type set through puppeteer's session did not outlast the navigation from the blank page, while a session's own
 * override lasts as long as the session.
 */
async function emulateMedia(
  page: Page,
  media: string,
  features: { name: string; value: string }[],
): Promise<void> {
  const session = await page.createCDPSession();
  await session.send('Emulation.setEmulatedMedia', { media, features });
}

/** Host-only cookies (no Domain attribute) for the host of `url`, so no other host ever receives them. */
async function setCookies(page: Page, spec: CaptureSpec): Promise<void> {
  if (spec.cookies.length === 0) return;
  await page.setCookie(
    ...spec.cookies.map((cookie) => ({
      name: cookie.name,
      value: cookie.value,
      url: spec.url,
      path: cookie.path ?? '/',
      secure: cookie.secure ?? false,
      httpOnly: cookie.httpOnly ?? false,
      ...(cookie.sameSite ? { sameSite: cookie.sameSite } : {}),
    })),
  );
}

/**
 * Whether decorateLoadedPage() (or `waitForSelector` after it) has anything to do on the loaded document, before
 * navigations are held.
 */
export function actsOnLoadedPage(spec: CaptureSpec): boolean {
  return (
    spec.blockCookieBanners ||
    filterSetsOf(spec).length > 0 ||
    spec.hideSelectors.length > 0 ||
    Boolean(spec.css || spec.js || spec.click || spec.waitForSelector)
  );
}

/**
 * After load, before the delay: consent banners dealt with and ads and chat widgets hidden (when asked), then the
 * customer's style sheet and hidden elements, then their script, then their `click`. The style sheet is one only the
 * browser holds (PageControl.addStyleSheet, not a <style> element), so a page's Content-Security-Policy does not refuse
 * it and its scripts cannot take it away; one rule per hidden selector (each one read by the browser's parser before
 * navigation). The script runs like one of the page's own (with the
 * page's rights and through the same egress rules); an error it throws is logged and the capture goes on.
 */
export async function decorateLoadedPage(
  page: Page,
  control: PageControl,
  spec: CaptureSpec,
  setup: NavigationSetup,
  deadline: number,
): Promise<void> {
  await Promise.all([
    spec.blockCookieBanners ? settleCookieBanners(page, deadline) : undefined,
    hideFilteredElements(page, control, spec, setup),
  ]);
  const rules = [...spec.hideSelectors.map(hidingRule), ...(spec.css ? [spec.css] : [])];
  // A style sheet only the browser holds: the page can neither refuse it (red team: a redefined adoptedStyleSheets
  // failed the capture) nor take it back (red team: a page resetting document.adoptedStyleSheets showed what
  // hideSelectors hid).
  if (rules.length > 0) await control.addStyleSheet(rules.join('\n'));
  if (spec.js) {
    // The trailing `undefined` makes the script's completion value nothing to wait for or send back.
    await page.evaluate(`${spec.js}\n;undefined`).catch((error: unknown) => {
      logger.info('Injected script failed', {
        host: hostOf(spec.url),
        scriptError: errorKind(error),
      });
    });
  }
  if (spec.click) await clickFirst(page, spec.url, spec.click);
}

/** What blockAds and blockChats hide, in every frame as it stands now; nothing when neither was asked for. */
export async function hideFilteredElements(
  page: Page,
  control: PageControl,
  spec: CaptureSpec,
  setup: NavigationSetup,
): Promise<void> {
  const sets = filterSetsOf(spec);
  if (sets.length > 0) {
    await hideFiltered(page, sets, setup.requestBlocking, (css, frameId) =>
      control.addStyleSheet(css, frameId),
    );
  }
}

/**
 * `click`: the first element matching `selector`, scrolled into view and clicked with the mouse, as a person would
 * (trusted events, at the element's centre). No such element, or one that cannot be clicked (not rendered), fails the
 * capture with the selector named.
 */
async function clickFirst(page: Page, url: string, selector: string): Promise<void> {
  const shown = JSON.stringify(selector);
  const target = await page.$(selector);
  if (!target) throw new CaptureFailedError(url, `No element matches the click selector ${shown}`, 'page');
  try {
    await target.scrollIntoView();
    await target.click();
  } catch {
    throw new CaptureFailedError(
      url,
      `The element matching the click selector ${shown} could not be clicked`,
      'page',
    );
  } finally {
    await target.dispose().catch(() => undefined);
  }
}

/** Waits for an element matching `selector` to be visible, until `timeoutMs`. */
export async function waitForVisible(page: Page, selector: string, timeoutMs: number): Promise<void> {
  await page.waitForSelector(selector, { visible: true, timeout: Math.max(1, timeoutMs) });
}
