import type { Page } from 'puppeteer-core';
import { logger } from '../logger';
import { type AdBlocking, hideAds, setAdBlocking } from './adBlocking';
import { setCookieBannerBlocking, settleCookieBanners } from './consentBlocking';
import type { CaptureSpec } from './renderer';
import { sendHeadersToOrigin } from './requestHeaders';

/**
 * The capture options a page gets before it navigates and after it has loaded. Each capture has a page of its own in
 * a context of its own, so nothing set here is ever undone: the page and its context are closed after the capture.
 * Options a request does not use send no command at all.
 */

/** What a page was given before the capture that takes it was known (a spare page, prepared off the request path). */
export interface PreparedPage {
  /** The id of autoconsent's registered script, when the page has it. */
  consentScript?: string;
  /** Its network ad blocking, when the page has it. */
  adBlocking?: AdBlocking;
}

/** What a capture switched on before navigation that still acts after load. */
export interface NavigationSetup {
  adBlocking?: AdBlocking;
}

/**
 * Before navigation: media type and features, time zone, locale, cookies, extra headers, ad and consent blocking
 * (undone when the page was prepared with it and the capture does not want it).
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
  const [adBlocking] = await Promise.all([
    setAdBlocking(page, spec.blockAds, prepared.adBlocking),
    mediaType !== '' || mediaFeatures.length > 0 ? emulateMedia(page, mediaType, mediaFeatures) : undefined,
    spec.timezone ? page.emulateTimezone(spec.timezone) : undefined,
    spec.locale ? emulateLocale(page, spec.userAgent, spec.locale) : undefined,
    setCookies(page, spec),
    sendHeadersToOrigin(page, spec.url, spec.headers),
    setCookieBannerBlocking(page, spec.url, spec.blockCookieBanners, prepared.consentScript),
  ]);
  return { adBlocking };
}

/** The puppeteer navigation condition for `waitUntil`: networkidle0 is "no request for 500 ms" (NETWORK_IDLE_MS). */
export function navigationCondition(spec: CaptureSpec) {
  return spec.waitUntil === 'networkidle' ? ('networkidle0' as const) : spec.waitUntil;
}

/**
 * navigator.language(s) and Accept-Language come from the user-agent override's acceptLanguage, which puppeteer's
 * setUserAgent does not carry, so it goes through a session of our own (it keeps the user agent already set); the
 * locale override makes Intl's default locale agree.
 */
async function emulateLocale(page: Page, userAgent: string, locale: string): Promise<void> {
  const session = await page.createCDPSession();
  await Promise.all([
    session.send('Network.setUserAgentOverride', { userAgent, acceptLanguage: locale }),
    session.send('Emulation.setLocaleOverride', { locale }),
  ]);
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
 * After load, before the delay: consent banners dealt with and ads hidden (when asked), then the customer's style
 * sheet and hidden elements, then their script. The style sheet is adopted (not a <style> element), so a page's
 * Content-Security-Policy does not refuse it; one rule per hidden selector, so an invalid selector drops its own rule
 * only. The script runs like one of the page's own (with the page's rights and through the same egress rules); an
 * error it throws is logged and the capture goes on.
 */
export async function decorateLoadedPage(
  page: Page,
  spec: CaptureSpec,
  setup: NavigationSetup,
  deadline: number,
): Promise<void> {
  await Promise.all([
    spec.blockCookieBanners ? settleCookieBanners(page, deadline) : undefined,
    spec.blockAds ? hideAds(page, setup.adBlocking) : undefined,
  ]);
  const rules = [
    ...spec.hideSelectors.map((selector) => `${selector} { visibility: hidden !important; }`),
    ...(spec.css ? [spec.css] : []),
  ];
  if (rules.length > 0) {
    await page.evaluate((sheets: string[]) => {
      const adopted = sheets.map((text) => {
        const sheet = new CSSStyleSheet();
        sheet.replaceSync(text);
        return sheet;
      });
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, ...adopted];
    }, rules);
  }
  if (spec.js) {
    // The trailing `undefined` makes the script's completion value nothing to wait for or send back.
    await page.evaluate(`${spec.js}\n;undefined`).catch((error: unknown) => {
      logger.info('Injected script failed', {
        url: spec.url,
        message: error instanceof Error ? error.message.slice(0, 500) : String(error),
      });
    });
  }
}

/** Waits for an element matching `selector` to be visible, until `timeoutMs`. */
export async function waitForVisible(page: Page, selector: string, timeoutMs: number): Promise<void> {
  await page.waitForSelector(selector, { visible: true, timeout: Math.max(1, timeoutMs) });
}
