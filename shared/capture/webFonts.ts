import type { Page } from 'puppeteer-core';

/**
 * The longest a capture waits for the page's web fonts once it has loaded. A font still loading after that is
 * drawn as the page's CSS says for a late font (fallback text, or none with `font-display: block`); the capture's
 * own time budget bounds the whole wait as well.
 */
export const WEB_FONTS_WAIT_MS = 3_000;

/**
 * Lays the page out (which requests the fonts its text uses), then waits for `document.fonts.ready` or the cap.
 * Page source text, not a function: see shared/capture/pageScripts.ts for why.
 */
const FONTS_READY = `(async () => {
  document.documentElement.getBoundingClientRect();
  await Promise.race([document.fonts.ready, new Promise((resolve) => setTimeout(resolve, ${WEB_FONTS_WAIT_MS}))]);
})()`;

/** The part of puppeteer's Frame this needs. `isolatedRealm()` is marked internal in its types, not in its code. */
interface FrameWithIsolatedRealm {
  isolatedRealm(): { evaluate(source: string): Promise<unknown> };
}

/**
 * Waits until the web fonts the page uses have loaded (or failed), at most WEB_FONTS_WAIT_MS. Runs in puppeteer's
 * isolated world, which shares the page's DOM but not its JavaScript: a page that replaced `document.fonts`,
 * `Promise` or `setTimeout` cannot stall or fake the wait.
 */
export async function waitForWebFonts(page: Page): Promise<void> {
  const frame = page.mainFrame() as unknown as FrameWithIsolatedRealm;
  await frame.isolatedRealm().evaluate(FONTS_READY);
}
