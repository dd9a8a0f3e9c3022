import { type Browser, type BrowserContext, type Page, TimeoutError } from 'puppeteer-core';
import { CaptureFailedError } from '../errors';
import { logger } from '../logger';
import { launchChromium } from './chromiumLaunch';
import type { ChromiumTempDir } from './chromiumTempDir';
import { DEVICE_PRESETS } from './devices';
import { captureElement } from './elementCapture';
import { captureFullPage } from './fullPage';
import { decorateLoadedPage, navigationCondition, prepareNavigation, waitForVisible } from './pageOptions';
import type { CaptureLimits, CaptureResult, CaptureSpec, Renderer } from './renderer';

export interface ChromiumRendererOptions {
  /** Extra launch flags, asked for at each launch (the egress proxy's flags). */
  launchArgs?: () => Promise<string[]>;
  env?: NodeJS.ProcessEnv;
}

/** Viewport (with its scale) and user agent a page emulates. */
type Emulation = Pick<CaptureSpec, 'width' | 'height' | 'isMobile' | 'hasTouch' | 'userAgent' | 'scale'>;

/** A fresh incognito context with one page: nothing of an earlier capture (cookies, storage, cache, workers). */
interface Tab {
  context: BrowserContext;
  page: Page;
  /** What the page was prepared to emulate, so a capture that wants the same sends no emulation commands. */
  emulation: Emulation;
}

/** A request without options: until the first capture says otherwise, spare tabs are prepared for it. */
const DEFAULT_EMULATION: Emulation = { ...DEVICE_PRESETS.desktop, scale: 1 };

/**
 * Headless Chromium, launched once per warm process and reused. Each capture gets its own incognito context, and the
 * next one (context, page, and the emulation the latest capture used) is opened as soon as a capture ends, so its
 * cost (about 50 ms) stays off the request path. A browser that crashed or disconnected is replaced on the next
 * request.
 */
export class ChromiumRenderer implements Renderer {
  private browser: Promise<Browser> | undefined;
  private spare: Promise<Tab> | undefined;
  /** Contexts of finished captures still closing, so settle() can wait for them too. */
  private readonly closing = new Set<Promise<void>>();
  /** The latest capture's emulation: the next spare is prepared with it, as callers tend to repeat their settings. */
  private expected: Emulation = DEFAULT_EMULATION;
  /** The running browser's temp folder, swept after each capture and removed with the browser. */
  private tempDir: ChromiumTempDir | undefined;

  constructor(private readonly options: ChromiumRendererOptions = {}) {}

  async warmUp(): Promise<void> {
    await this.takeTab().then((tab) => {
      this.spare = Promise.resolve(tab);
    });
  }

  async capture(spec: CaptureSpec, limits: CaptureLimits): Promise<CaptureResult> {
    const budgetMs = Math.max(0, limits.deadline - Date.now());
    let tab: Tab;
    try {
      tab = await this.takeTab();
    } catch (error) {
      logger.error('Browser unavailable', { error: error as Error });
      throw new CaptureFailedError(spec.url, 'Browser could not be started');
    }
    this.expected = emulationOf(spec);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new CaptureFailedError(
              spec.url,
              `Capture did not finish within ${Math.round(budgetMs / 1000)} s`,
            ),
          ),
        budgetMs,
      );
    });
    const crashed = new Promise<never>((_, reject) => {
      tab.page.once('error', () => reject(new CaptureFailedError(spec.url, 'The page crashed the renderer')));
    });
    try {
      return await Promise.race([this.shoot(tab, spec, budgetMs), timeout, crashed]);
    } catch (error) {
      throw asCaptureFailure(spec.url, error);
    } finally {
      clearTimeout(timer);
      // Closing the context discards everything the page stored. The image does not wait for it: no later capture
      // can see this context either way, since each one takes a context of its own.
      const closed = tab.context
        .close()
        .catch(() => undefined)
        .then(async () => {
          await this.tempDir?.sweep();
        });
      this.closing.add(closed);
      closed.finally(() => this.closing.delete(closed));
      // Then prepare the next tab. Not at the start of the capture: on two cores that slowed the capture in flight
      // more than it saved the next one (docs/performance.md).
      this.prepareSpare();
    }
  }

  async settle(): Promise<void> {
    await Promise.all([...this.closing, this.spare?.catch(() => undefined)]);
  }

  async close(): Promise<void> {
    const browser = this.browser;
    const tempDir = this.tempDir;
    this.browser = undefined;
    this.spare = undefined;
    if (browser) await (await browser.catch(() => undefined))?.close().catch(() => undefined);
    // The removal on 'disconnected' is not awaited by anyone; a process about to exit must not leave it behind.
    await tempDir?.remove();
  }

  private async shoot(tab: Tab, spec: CaptureSpec, budgetMs: number): Promise<CaptureResult> {
    const { page } = tab;
    const deadline = Date.now() + budgetMs;
    await emulate(page, tab.emulation, emulationOf(spec));
    await prepareNavigation(page, spec);
    // The load event by default, not network idle: idle windows add half a second to every capture for nothing.
    await page.goto(spec.url, { waitUntil: navigationCondition(spec), timeout: budgetMs });
    await decorateLoadedPage(page, spec, deadline);
    if (spec.delay > 0) await new Promise((resolve) => setTimeout(resolve, spec.delay));
    if (spec.waitForSelector) await waitForSelector(page, spec, spec.waitForSelector, deadline);
    // A page that navigated itself (meta refresh, script) somewhere unreachable or refused by the egress gate
    // ends on Chromium's error page: that is a failed capture, not an image of the error.
    if (page.url().startsWith('chrome-error:')) {
      throw new CaptureFailedError(spec.url, 'The page navigated to an address that could not be loaded');
    }
    const quality = spec.format === 'png' ? undefined : spec.quality;
    // PNG is lossless, so the faster encoder (lighter zlib, no row filters) gives the very same pixels, in a larger
    // file: 1.2-4x here, and up to 6x faster on photographic pages (docs/performance.md). JPEG and WebP ignore it.
    const optimizeForSpeed = spec.format === 'png';
    if (spec.selector) {
      return captureElement(page, spec, spec.selector, { type: spec.format, quality, optimizeForSpeed });
    }
    if (!spec.fullPage) {
      const image = await page.screenshot({ type: spec.format, quality, optimizeForSpeed });
      return { image: Buffer.from(image), truncated: false };
    }
    return captureFullPage(page, spec, { type: spec.format, quality, optimizeForSpeed });
  }

  private prepareSpare(): void {
    this.spare ??= this.openTab();
    this.spare.catch(() => undefined);
  }

  private async takeTab(): Promise<Tab> {
    const spare = this.spare;
    this.spare = undefined;
    if (spare) {
      const tab = await spare.catch(() => undefined);
      if (tab && !tab.page.isClosed() && tab.context.browser().connected) return tab;
    }
    return this.openTab();
  }

  private async openTab(): Promise<Tab> {
    const browser = await this.liveBrowser();
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    page.on('dialog', (dialog) => void dialog.dismiss().catch(() => undefined));
    // Emulation set here, off the request path; a mobile viewport even reloads the blank page in puppeteer.
    const emulation = this.expected;
    await emulate(page, undefined, emulation);
    return { context, page, emulation };
  }

  private liveBrowser(): Promise<Browser> {
    if (!this.browser) {
      const launching = this.launch();
      this.browser = launching;
      launching.then(
        (browser) =>
          browser.once('disconnected', () => {
            if (this.browser === launching) {
              this.browser = undefined;
              this.spare = undefined;
            }
          }),
        () => {
          if (this.browser === launching) this.browser = undefined;
        },
      );
    }
    return this.browser;
  }

  private async launch(): Promise<Browser> {
    const { browser, tempDir } = await launchChromium(
      (await this.options.launchArgs?.()) ?? [],
      this.options.env,
    );
    this.tempDir = tempDir;
    browser.once('disconnected', () => {
      if (this.tempDir === tempDir) this.tempDir = undefined;
    });
    return browser;
  }
}

function emulationOf(spec: CaptureSpec): Emulation {
  const { width, height, isMobile, hasTouch, userAgent, scale } = spec;
  return { width, height, isMobile, hasTouch, userAgent, scale };
}

/** Kept back from the budget when waiting for a selector, so that the wait's own reason is the one reported. */
const SELECTOR_WAIT_MARGIN_MS = 250;

/** `waitForSelector` within what is left of the budget; not visible in time is the capture's failure, with why. */
async function waitForSelector(
  page: Page,
  spec: CaptureSpec,
  selector: string,
  deadline: number,
): Promise<void> {
  const timeoutMs = deadline - Date.now() - SELECTOR_WAIT_MARGIN_MS;
  try {
    await waitForVisible(page, selector, timeoutMs);
  } catch (error) {
    const shown = JSON.stringify(selector);
    if (error instanceof TimeoutError) {
      throw new CaptureFailedError(
        spec.url,
        `No element matching ${shown} became visible within ${Math.round(timeoutMs / 1000)} s`,
      );
    }
    if (/not a valid selector|SyntaxError/i.test(error instanceof Error ? error.message : '')) {
      throw new CaptureFailedError(spec.url, `The selector ${shown} is not a valid CSS selector`);
    }
    throw error;
  }
}

/** Brings a page from the emulation it has (none yet: undefined) to the one wanted, sending only what differs. */
async function emulate(page: Page, current: Emulation | undefined, wanted: Emulation): Promise<void> {
  const sameViewport =
    current !== undefined &&
    current.width === wanted.width &&
    current.height === wanted.height &&
    current.isMobile === wanted.isMobile &&
    current.hasTouch === wanted.hasTouch &&
    current.scale === wanted.scale;
  if (!sameViewport) {
    await page.setViewport({
      width: wanted.width,
      height: wanted.height,
      deviceScaleFactor: wanted.scale,
      isMobile: wanted.isMobile,
      hasTouch: wanted.hasTouch,
    });
  }
  if (current?.userAgent !== wanted.userAgent) await page.setUserAgent(wanted.userAgent);
}

/** A reason that is safe and useful to show the customer; internals go to the log only. */
function asCaptureFailure(url: string, error: unknown): CaptureFailedError {
  if (error instanceof CaptureFailedError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const netError = /net::ERR_[A-Z_]+/.exec(message)?.[0];
  if (netError) return new CaptureFailedError(url, `The page could not be loaded (${netError})`);
  if (error instanceof TimeoutError) return new CaptureFailedError(url, 'Navigation timed out');
  if (/Target closed|Session closed|Protocol error|detached|disconnected/i.test(message)) {
    return new CaptureFailedError(url, 'The browser stopped during the capture');
  }
  logger.error('Capture failed', { error: error as Error });
  return new CaptureFailedError(url, 'The page could not be captured');
}
