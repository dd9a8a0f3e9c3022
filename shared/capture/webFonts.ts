import type { Page } from 'puppeteer-core';
import { isolatedRealmOf } from './pageScripts';

/**
 * The longest a capture waits for the page's web fonts once it has loaded. A font still loading after that is
 * drawn as the page's CSS says for a late font (fallback text, or none with `font-display: block`); the capture's
 * own time budget bounds the whole wait as well.
 */
export const WEB_FONTS_WAIT_MS = 3_000;

/** How often the wait looks at the fonts' status. */
const FONTS_CHECK_MS = 10;

/**
 * Lays the page out (which requests the fonts its text uses), then waits until no font is loading, or the cap.
 * `document.fonts.ready` alone is not enough: Chromium resolves it only once the document has loaded, and a page
 * captured at DOMContentLoaded may still be loading its images. Page source text, not a function: see
 * shared/capture/pageScripts.ts for why.
 */
const FONTS_READY = `(async () => {
  document.documentElement?.getBoundingClientRect();
  await new Promise((resolve) => {
    const end = performance.now() + ${WEB_FONTS_WAIT_MS};
    const check = () => {
      if (document.fonts.status === 'loaded' || performance.now() >= end) resolve(undefined);
      else setTimeout(check, ${FONTS_CHECK_MS});
    };
    document.fonts.ready.then(resolve);
    check();
  });
})()`;

/**
 * Waits until the web fonts the page uses have loaded (or failed), at most WEB_FONTS_WAIT_MS. Runs in puppeteer's
 * isolated world, which shares the page's DOM but not its JavaScript: a page that replaced `document.fonts`,
 * `Promise` or `setTimeout` cannot stall or fake the wait.
 */
export async function waitForWebFonts(page: Page): Promise<void> {
  await isolatedRealmOf(page.mainFrame()).evaluate(FONTS_READY);
}
