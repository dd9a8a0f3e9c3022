import { type Browser, type BrowserContext, type Page, TimeoutError } from 'puppeteer-core';
import { PROXY_BYPASS_RULES } from '../egress/egressProxy';
import {
  type AppError,
  CaptureFailedError,
  CaptureTimedOutError,
  ClientGoneError,
  ValidationError,
} from '../errors';
import { errorKind, hostOf, logger } from '../logger';
import { CAPTURE_BUDGETS, type CaptureBudgets, PAGE_KILL_GRACE_MS } from '../timing';
import { startRequestBlocking } from './adBlocking';
import { answerWithin } from './answerWithin';
import { identityOverride } from './browserIdentity';
import { budgetExceeded, CaptureBudget } from './captureBudget';
import { launchChromium } from './chromiumLaunch';
import type { ChromiumTempDir } from './chromiumTempDir';
import { addConsentScript } from './consentBlocking';
import { DEVICE_PRESETS } from './devices';
import { type DroppedEvent, onDroppedEvent, PAGE_ANSWER_TOO_LARGE } from './devtoolsMessageCap';
import { captureElement } from './elementCapture';
import { captureFullPage } from './fullPage';
import { PAGE_MEMORY_LIMIT_MB } from './memoryLimits';
import { IMAGE_TOO_LARGE } from './oversizedImage';
import { pageContent, pageMetadata } from './pageContent';
import { CONTEXT_GONE, PageControl, PageScriptError } from './pageControl';
import { guardPageMemory } from './pageMemoryGuard';
import {
  actsOnLoadedPage,
  decorateLoadedPage,
  hideFilteredElements,
  navigationCondition,
  type PreparedPage,
  prepareNavigation,
  waitForVisible,
} from './pageOptions';
import { hideOnElements } from './pageScripts';
import { guardPageTraffic, PAGE_TRAFFIC_LIMITS } from './pageTrafficGuard';
import { printPdf } from './pdfPrint';
import {
  CAPTURE_CONTENT_TYPES,
  type CaptureLimits,
  type CaptureResult,
  type CaptureSpec,
  type ImageFormat,
  isContentFormat,
  isImageFormat,
  type Renderer,
} from './renderer';
import { assertSelectorsParse } from './selectorCheck';
import { captureView } from './viewCapture';
import { waitForWebFonts } from './webFonts';

export interface ChromiumRendererOptions {
  /** Extra launch flags, asked for at each launch (the egress proxy's flags). */
  launchArgs?: () => Promise<string[]>;
  env?: NodeJS.ProcessEnv;
  /** The parts of each capture's budget; the specified ones (CAPTURE_BUDGETS) unless a test shortens them. */
  budgets?: CaptureBudgets;
  /** What a capture's scripts may hold in all (MiB): PAGE_MEMORY_LIMIT_MB unless the operator or a test says. */
  pageMemoryLimitMb?: number;
  /** A proxy of its own for each capture's browser context (the egress proxy's routes); else the browser's. */
  contextProxy?: () => Promise<ContextProxy>;
  /** How long a finished capture's context, or a browser, may take to close: PAGE_KILL_GRACE_MS unless a test says. */
  closeGraceMs?: number;
}

/** One browser context's way out (shared/egress/egressProxy.ts, EgressRoute). */
export interface ContextProxy {
  readonly url: string;
  close(): Promise<void>;
}

/** A page that replaced its document once it was to be captured, in a way that cannot be held back. */
export const DOCUMENT_REPLACED = 'The page replaced its document while it was being captured';

/** A page whose document our scripts could not read as it stands (PageScriptError). */
export const PAGE_UNREADABLE = "The page's document could not be read as it stands";

/** A capture whose scripts and workers held more than the page memory limit. */
export const pageMemoryExceeded = (limitMb: number) =>
  `The page's scripts and workers used more than ${limitMb} MiB of memory`;

/** How long after a capture that asked for blockAds or blockCookieBanners spare pages are still prepared with it. */
const SWITCH_KEPT_READY_MS = 5 * 60_000;

/** The switches a spare page can be prepared with, ahead of a capture that may ask for them. */
const PREPARED_SWITCHES = ['blockAds', 'blockCookieBanners'] as const;
type PreparedSwitch = (typeof PREPARED_SWITCHES)[number];

/** How long a renderer has to answer before a capture that ran out of time is put down to the page's scripts. */
const BUSY_PROBE_MS = 500;
/** Where every capture's tab starts, before its navigation commits. */
const BLANK_PAGE = 'about:blank';

/** Browsers a capture may try to open its tab on, when each goes or is replaced under it. */
const TAB_ATTEMPTS = 3;

/** Viewport (with its scale), user agent (with its client hints) and locale a page emulates. */
type Emulation = Pick<
  CaptureSpec,
  'width' | 'height' | 'isMobile' | 'hasTouch' | 'userAgent' | 'scale' | 'locale'
>;

/** A fresh incognito context with one page: nothing of an earlier capture (cookies, storage, cache, workers). */
interface Tab extends PreparedPage {
  context: BrowserContext;
  /** The context's own proxy, closed as soon as the capture ends. */
  proxy?: ContextProxy;
  page: Page;
  /** Our own session on the page: navigation hold, isolated world, responsiveness. */
  control: PageControl;
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
  /** When a capture last asked for each switch a spare page can be prepared with (ms since epoch). */
  private readonly lastAskedFor = new Map<PreparedSwitch, number>();
  /** The running browser's temp folder, swept after each capture and removed with the browser. */
  private tempDir: ChromiumTempDir | undefined;
  /** Captures running on each browser, so that a browser being replaced closes after its last one. */
  private readonly running = new Map<Browser, number>();
  /** Browsers being replaced: no capture starts on them any more. */
  private readonly replaced = new WeakSet<Browser>();
  /** The launch each browser came from, so that replacing it can tell at once whether it is still `browser`. */
  private readonly launchOf = new WeakMap<Browser, Promise<Browser>>();
  /** Set by close(): no browser is launched after it. */
  private closed = false;

  private readonly budgets: CaptureBudgets;
  private readonly memoryLimitMb: number;
  private readonly closeGraceMs: number;

  constructor(private readonly options: ChromiumRendererOptions = {}) {
    this.budgets = options.budgets ?? CAPTURE_BUDGETS;
    this.memoryLimitMb = options.pageMemoryLimitMb ?? PAGE_MEMORY_LIMIT_MB;
    this.closeGraceMs = options.closeGraceMs ?? PAGE_KILL_GRACE_MS;
  }

  async warmUp(): Promise<void> {
    await this.takeTab().then((tab) => {
      this.spare = Promise.resolve(tab);
    });
  }

  /**
   * Captures within the budget (navigation, then the rest, never past `limits.deadline`). When time runs out, the
   * client hangs up or the page crashes, the capture fails at once and its context is closed, which ends the page's
   * renderer process even when a script holds it; a context that will not close takes its browser out of use.
   */
  async capture(spec: CaptureSpec, limits: CaptureLimits): Promise<CaptureResult> {
    if (limits.signal?.aborted) throw new ClientGoneError();
    let tab: Tab;
    try {
      tab = await this.takeTab();
    } catch (error) {
      logger.error('Browser unavailable', { error: error as Error });
      throw new CaptureFailedError(spec.url, 'Browser could not be started');
    }
    const browser = tab.context.browser();
    this.running.set(browser, (this.running.get(browser) ?? 0) + 1);
    for (const name of PREPARED_SWITCHES) if (spec[name]) this.lastAskedFor.set(name, Date.now());
    let fail: (error: AppError) => void = () => undefined;
    const stopped = new Promise<never>((_, reject) => {
      fail = reject;
    });
    const budget = new CaptureBudget(limits.deadline, this.budgets, (phase, allowedMs) => {
      // No document came (its server never answered): no script of the page ran to blame, and the probe goes to the
      // blank page the navigation is leaving, which does not answer while it waits (red team, round 20).
      const arrived = tab.page.url() !== BLANK_PAGE;
      void (arrived ? tab.control.responsive(BUSY_PROBE_MS) : Promise.resolve(true)).then((responsive) =>
        fail(budgetExceeded(spec.url, phase, allowedMs, !responsive)),
      );
    });
    const onAbort = () => fail(new ClientGoneError());
    limits.signal?.addEventListener('abort', onAbort, { once: true });
    tab.page.once('error', () =>
      fail(new CaptureFailedError(spec.url, 'The page crashed the renderer', 'page')),
    );
    tab.control.whenReplaced(() => fail(new CaptureFailedError(spec.url, DOCUMENT_REPLACED, 'page')));
    const { memoryLimitMb } = this;
    const memory = guardPageMemory(
      { page: tab.page, heapUsage: () => tab.control.heapUsage() },
      memoryLimitMb,
      (usedBytes) => {
        logger.warn('Page stopped for its memory', {
          usedMb: Math.round(usedBytes / 2 ** 20),
          memoryLimitMb,
        });
        fail(new CaptureFailedError(spec.url, pageMemoryExceeded(memoryLimitMb), 'page'));
      },
    );
    const droppedEvents = (listener: (event: DroppedEvent) => void) => onDroppedEvent(browser, listener);
    const traffic = guardPageTraffic({ ...tab, droppedEvents }, PAGE_TRAFFIC_LIMITS, (reason) => {
      logger.warn('Page stopped for its traffic', { host: hostOf(spec.url), reason });
      fail(new CaptureFailedError(spec.url, reason, 'page'));
    });
    try {
      const result = await Promise.race([this.shoot(tab, spec, budget), stopped]);
      // Only an emulation that worked prepares the next tabs (red team: a spec the browser refused, sent past the
      // front, made every later tab fail to open).
      this.expected = emulationOf(spec);
      return result;
    } catch (error) {
      // A selector the browser cannot parse is the request's fault (400), found before the page was loaded.
      if (error instanceof ClientGoneError || error instanceof ValidationError) throw error;
      throw asCaptureFailure(spec, error, {
        held: tab.control.isHeld,
        replacedItself: await replacedItsDocument(tab.control, error),
        browserConnected: tab.page.browser().connected,
      });
    } finally {
      budget.dispose();
      memory.stop();
      traffic.stop();
      limits.signal?.removeEventListener('abort', onAbort);
      this.retire(tab);
      this.finishedOn(browser);
      // Then prepare the next tab. Not at the start of the capture: on two cores that slowed the capture in flight
      // more than it saved the next one (docs/performance.md).
      this.prepareSpare();
    }
  }

  async settle(): Promise<void> {
    await Promise.all([...this.closing, this.spare?.catch(() => undefined)]);
  }

  async close(): Promise<void> {
    this.closed = true;
    const browser = this.browser;
    const tempDir = this.tempDir;
    this.browser = undefined;
    this.spare = undefined;
    // With the browsers replaced while captures still ran on them.
    const browsers = new Set([...this.running.keys(), await browser?.catch(() => undefined)]);
    await Promise.all([...browsers].map((each) => each?.close().catch(() => undefined)));
    // The removal on 'disconnected' is not awaited by anyone; a process about to exit must not leave it behind.
    await tempDir?.remove();
  }

  private async shoot(tab: Tab, spec: CaptureSpec, budget: CaptureBudget): Promise<CaptureResult> {
    const { page } = tab;
    // One after the other: a change of mobile or touch emulation reloads the blank page, which took the selectors'
    // parse with it (red team, round 24: 500s counted as ours after another account's device preset).
    await emulate(page, tab.control, tab.emulation, emulationOf(spec));
    await assertSelectorsParse(tab.control, spec);
    const setup = await prepareNavigation(page, spec, tab);
    budget.startNavigation();
    tab.control.ownNavigationStarts();
    // The load event by default, not network idle: idle windows add half a second to every capture for nothing.
    // The budget, not puppeteer, times it out.
    const response = await page.goto(documentAddress(spec), {
      waitUntil: navigationCondition(spec),
      timeout: 0,
    });
    // With domcontentloaded, the document may still be loading (images, frames): it is captured as it stands.
    if (spec.waitUntil === 'domcontentloaded') tab.control.acceptLoading();
    const status = response?.status() ?? 0;
    if (spec.failOnHttpError && status >= 400) {
      throw new CaptureFailedError(spec.url, `The page answered with HTTP status ${status}`, 'page');
    }
    // `delay` is the caller's own wait: it lengthens the time after load instead of eating into it.
    budget.loaded(spec.delay);
    // Steps that act on the document before it is held may fail because the page replaced it: marked, to tell.
    if (actsOnLoadedPage(spec)) await tab.control.markDocument();
    await decorateLoadedPage(page, tab.control, spec, setup, budget.phaseEnd());
    if (spec.delay > 0) await new Promise((resolve) => setTimeout(resolve, spec.delay));
    if (spec.waitForSelector) await waitForSelector(page, spec, spec.waitForSelector, budget.phaseEnd());
    // The page as it stands now: it may not navigate any more, and a navigation it started is waited for.
    await tab.control.hold();
    await tab.control.settled();
    // A page that navigated itself (meta refresh, script) somewhere unreachable or refused by the egress gate
    // ends on Chromium's error page: that is a failed capture, not an image of the error.
    if (page.url().startsWith('chrome-error:')) {
      throw new CaptureFailedError(
        spec.url,
        'The page navigated to an address that could not be loaded',
        'page',
      );
    }
    // Again, for what the page added since load; the image is taken right after.
    await Promise.all([
      hideFilteredElements(page, tab.control, spec, setup),
      // Not into the DOM that `format: "html"` answers with (red team, round 24). Markdown leaves out what is hidden,
      // and only an element's own style outranks the page's `!important` (red team, round 31: text it kept visible
      // so was in the Markdown).
      spec.format === 'html' ? undefined : hideOnElements(tab.control, spec.hideSelectors),
    ]);
    const metadata = spec.metadata
      ? {
          metadata: await pageMetadata(tab.control, {
            finalUrl: finalUrlOf(spec, page.url()),
            statusCode: response?.status() ?? null,
          }),
        }
      : {};
    if (isContentFormat(spec.format)) {
      const text = await pageContent(tab.control, spec.format);
      return {
        image: Buffer.from(text, 'utf8'),
        contentType: CAPTURE_CONTENT_TYPES[spec.format],
        truncated: false,
        ...metadata,
      };
    }
    await waitForWebFonts(page);
    if (spec.format === 'pdf') {
      budget.printing();
      return { ...(await printPdf(page, spec, spec.pdf ?? missingPdfOptions())), ...metadata };
    }
    // AVIF is encoded from a PNG outside the browser (withAvifEncoding): asked for here, it is a wiring error.
    if (!isImageFormat(spec.format)) throw new Error(`The browser does not encode ${spec.format}`);
    return { ...(await this.image(tab, spec, spec.format)), ...metadata };
  }

  /** The page's pixels in `type`, the spec's. */
  private async image(tab: Tab, spec: CaptureSpec, type: ImageFormat): Promise<CaptureResult> {
    const { page } = tab;
    const encoding = {
      type,
      quality: type === 'png' ? undefined : spec.quality,
      // PNG is lossless, so the faster encoder (lighter zlib, no row filters) gives the very same pixels, in a
      // larger file: 1.2-4x here, and up to 6x faster on photographic pages (docs/performance.md). JPEG and WebP
      // ignore it.
      optimizeForSpeed: type === 'png',
      omitBackground: spec.omitBackground,
    };
    if (spec.selector) return captureElement(page, tab.control, spec, spec.selector, encoding);
    if (!spec.fullPage) return captureView(page, tab.control, spec, encoding);
    return captureFullPage(page, tab.control, spec, encoding);
  }

  /**
   * Closes a finished capture's context, which discards everything the page stored and ends its renderer. The image
   * does not wait for it: no later capture can see this context, since each one takes a context of its own. A
   * context that does not close in time (its renderer will not go) takes the browser with it.
   */
  private retire(tab: Tab): void {
    // The capture has answered: nothing its page still asks for goes out, and nothing it started connecting to waits.
    const proxyClosed = tab.proxy?.close();
    this.track(
      closesWithin(tab.context, this.closeGraceMs)
        .then(async (inTime) => {
          if (!inTime) await this.replaceBrowser(tab.context.browser());
        })
        .then(async () => {
          await Promise.all([proxyClosed, this.tempDir?.sweep()]);
        }),
    );
  }

  /** Keeps a closing until it ends, so that settle() can wait for it. */
  private track(closing: Promise<void>): void {
    this.closing.add(closing);
    closing.finally(() => this.closing.delete(closing));
  }

  /**
   * Takes a browser that can no longer be trusted out of use: the next capture launches a new one. The captures
   * still running on it finish first (locally one browser serves every account: on a loaded machine a flooding
   * page's context took longer than its grace to close, and closing the browser at once failed the other accounts'
   * captures beside it); deployed, a renderer instance runs one capture at a time, and the browser closes at once.
   * Browsers going out stay fewer than the captures running, which admission bounds, and none outlives its captures'
   * deadlines.
   */
  private async replaceBrowser(browser: Browser): Promise<void> {
    logger.warn('A stopped page did not close in time; replacing the browser');
    this.replaced.add(browser);
    if (this.browser && this.browser === this.launchOf.get(browser)) {
      this.browser = undefined;
      this.spare = undefined;
    }
    if (!this.running.has(browser)) await this.closeBrowser(browser);
  }

  private finishedOn(browser: Browser): void {
    const left = (this.running.get(browser) ?? 1) - 1;
    if (left > 0) this.running.set(browser, left);
    else {
      this.running.delete(browser);
      if (this.replaced.has(browser)) this.track(this.closeBrowser(browser));
    }
  }

  private async closeBrowser(browser: Browser): Promise<void> {
    if (!(await closesWithin(browser, this.closeGraceMs))) browser.process()?.kill('SIGKILL');
  }

  private prepareSpare(): void {
    this.spare ??= this.liveBrowser().then((browser) => this.openTab(browser));
    this.spare.catch(() => undefined);
  }

  private async takeTab(): Promise<Tab> {
    const spare = this.spare;
    this.spare = undefined;
    if (spare) {
      const tab = await spare.catch(() => undefined);
      if (tab && this.usable(tab)) return tab;
    }
    for (let attempt = 1; ; attempt++) {
      const browser = await this.liveBrowser();
      try {
        return await this.openTab(browser);
      } catch (error) {
        // The browser went, or was taken out of use, while the tab opened on it: its successor opens one instead
        // (replacements can follow one another while captures keep failing as their pages').
        if (attempt === TAB_ATTEMPTS || (browser.connected && !this.replaced.has(browser))) throw error;
      }
    }
  }

  private usable(tab: Tab): boolean {
    const browser = tab.context.browser();
    return !tab.page.isClosed() && browser.connected && !this.replaced.has(browser);
  }

  private async openTab(browser: Browser): Promise<Tab> {
    const { context, proxy } = await this.newContext(browser);
    try {
      return { ...(await this.prepareTab(context)), ...(proxy ? { proxy } : {}) };
    } catch (error) {
      void context.close().catch(() => undefined);
      void proxy?.close();
      throw error;
    }
  }

  /** An incognito context, with its own proxy if the renderer has them; the proxy also closes with the browser. */
  private async newContext(browser: Browser): Promise<{ context: BrowserContext; proxy?: ContextProxy }> {
    const own = await this.options.contextProxy?.();
    if (!own) return { context: await browser.createBrowserContext() };
    const closeOwn = () => void own.close();
    // `on`, not `once`: puppeteer's `once` registers a wrapper that `off` cannot find, so every finished capture's
    // route (and its verdicts) stayed held by the browser (red team).
    browser.on('disconnected', closeOwn);
    const proxy: ContextProxy = {
      url: own.url,
      close: () => {
        browser.off('disconnected', closeOwn);
        return own.close();
      },
    };
    try {
      const context = await browser.createBrowserContext({
        proxyServer: own.url,
        proxyBypassList: PROXY_BYPASS_RULES,
      });
      return { context, proxy };
    } catch (error) {
      void proxy.close();
      throw error;
    }
  }

  private async prepareTab(context: BrowserContext): Promise<Omit<Tab, 'proxy'>> {
    const page = await context.newPage();
    const control = await PageControl.attach(page);
    page.on('dialog', (dialog) => void dialog.dismiss().catch(() => undefined));
    // Emulation set here, off the request path; a mobile viewport even reloads the blank page in puppeteer. So are
    // the blocking switches while captures keep asking for them (autoconsent's 210 KB take 15-40 ms to hand to the
    // browser, network blocking a few round trips), and a capture that does not want one drops it in one round trip.
    // A switch that cannot be prepared is left to the capture that asks for it, which then reports why.
    const emulation = this.expected;
    const [consentScript, requestBlocking] = await Promise.all([
      this.recentlyAskedFor('blockCookieBanners') ? addConsentScript(page).catch(() => undefined) : undefined,
      this.recentlyAskedFor('blockAds')
        ? startRequestBlocking(page, ['ads']).catch(() => undefined)
        : undefined,
      emulate(page, control, undefined, emulation),
    ]);
    return {
      context,
      page,
      control,
      emulation,
      ...(consentScript ? { consentScript } : {}),
      ...(requestBlocking ? { requestBlocking } : {}),
    };
  }

  private recentlyAskedFor(name: PreparedSwitch): boolean {
    return Date.now() - (this.lastAskedFor.get(name) ?? Number.NEGATIVE_INFINITY) < SWITCH_KEPT_READY_MS;
  }

  private liveBrowser(): Promise<Browser> {
    if (this.closed) return Promise.reject(new Error('The renderer was closed'));
    if (!this.browser) {
      const launching = this.launch();
      this.browser = launching;
      launching.then(
        (browser) => {
          this.launchOf.set(browser, launching);
          browser.once('disconnected', () => {
            if (this.browser === launching) {
              this.browser = undefined;
              this.spare = undefined;
            }
          });
        },
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

/**
 * What the page navigates to: its URL, or the customer's own document as a data: URL. A document from a data: URL
 * has an opaque origin of its own (no cookies, no storage, no origin of ours to act for), and what it loads goes
 * through the egress proxy like a page's requests; Chromium refuses it file: addresses, as it does any web page.
 */
function documentAddress(spec: CaptureSpec): string {
  if (spec.html === undefined) return spec.url;
  return `data:text/html;charset=utf-8;base64,${Buffer.from(spec.html, 'utf8').toString('base64')}`;
}

/**
 * Where the page ended up. A document given as `html` that is still itself has no address: its data: URL would echo
 * the whole document (up to 1.4 MB of base64), too large for a job's item to keep beside the document.
 */
function finalUrlOf(spec: CaptureSpec, url: string): string | null {
  return spec.html !== undefined && url.startsWith('data:') ? null : url;
}

function missingPdfOptions(): never {
  throw new Error('A PDF capture came without its print options');
}

function emulationOf(spec: CaptureSpec): Emulation {
  const { width, height, isMobile, hasTouch, userAgent, scale, locale } = spec;
  return { width, height, isMobile, hasTouch, userAgent, scale, ...(locale ? { locale } : {}) };
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
      throw new CaptureTimedOutError(
        spec.url,
        `No element matching ${shown} became visible within ${Math.round(timeoutMs / 1000)} s`,
        'page',
      );
    }
    throw error;
  }
}

/**
 * Brings a page from the emulation it has (none yet: undefined) to the one wanted, sending only what differs. The
 * user agent, its client hints and Accept-Language go in one override through our own session (puppeteer's
 * setUserAgent carries no Accept-Language); the locale override makes Intl's default locale agree.
 */
async function emulate(
  page: Page,
  control: PageControl,
  current: Emulation | undefined,
  wanted: Emulation,
): Promise<void> {
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
  if (current?.userAgent !== wanted.userAgent || current?.locale !== wanted.locale) {
    await control.overrideIdentity(identityOverride(wanted.userAgent, wanted.locale));
  }
  // A page prepared without a locale needs no override to stay without one.
  if (current?.locale !== wanted.locale) await control.overrideLocale(wanted.locale);
}

/** Closes a context or browser; false when it had not closed after `ms`. */
async function closesWithin(closable: { close(): Promise<void> }, ms: number): Promise<boolean> {
  const closed = closable.close().then(
    () => true,
    () => true,
  );
  return (await answerWithin(closed, ms)) !== 'late';
}

/** Puppeteer's words for a call whose browser, or the page's session, went away under it. */
const SESSION_GONE = /Target closed|Session closed|Connection closed|disconnected/i;

/** Whether the page replaced its document before the hold, where that may explain `error` (one not already ours). */
async function replacedItsDocument(control: PageControl, error: unknown): Promise<boolean> {
  if (control.isHeld || error instanceof CaptureFailedError) return false;
  return control.navigatedItself || (await control.documentReplaced()) === true;
}

/** Where the page stood when the capture failed. */
interface FailedPage {
  held: boolean;
  /** The page replaced its document itself before the hold (replacedItsDocument). */
  replacedItself: boolean;
  browserConnected: boolean;
}

/** A reason that is safe and useful to show the customer; internals go to the log only. */
function asCaptureFailure(
  { url, format }: CaptureSpec,
  error: unknown,
  { held, replacedItself, browserConnected }: FailedPage,
): CaptureFailedError {
  if (error instanceof CaptureFailedError) return error;
  if (error instanceof PageScriptError) {
    // A warning, with the page's host: should one of ours fail on honest pages, the pattern shows here (red team).
    logger.warn('A page script of ours could not read the page', {
      host: hostOf(url),
      scriptError: errorKind(error),
    });
    return new CaptureFailedError(url, PAGE_UNREADABLE, 'page');
  }
  const message = error instanceof Error ? error.message : String(error);
  const netError = /net::ERR_[A-Z_]+/.exec(message)?.[0];
  if (netError) {
    // Every connection goes through the egress proxy, so Chromium names an unreachable host a failed tunnel.
    const why = netError === 'net::ERR_TUNNEL_CONNECTION_FAILED' ? ': its host could not be reached' : '';
    return new CaptureFailedError(url, `The page could not be loaded (${netError})${why}`, 'page');
  }
  if (error instanceof TimeoutError) return new CaptureTimedOutError(url, 'Navigation timed out', 'page');
  // Puppeteer's and DevTools' words for a call whose document was replaced under it: once the page is held, only
  // the page can have done that (whenReplaced may be told just after).
  if (held && CONTEXT_GONE.test(message)) return new CaptureFailedError(url, DOCUMENT_REPLACED, 'page');
  if (message.includes(PAGE_ANSWER_TOO_LARGE)) {
    // For an image, the only answer that large is the image itself.
    const reason = isImageFormat(format) ? IMAGE_TOO_LARGE : PAGE_ANSWER_TOO_LARGE;
    return new CaptureFailedError(url, reason, 'page');
  }
  // Before the hold, a page that replaced its document pulls it from under the options that act on it (`click`,
  // `css`, `hideSelectors`, `waitForSelector`), in whatever words puppeteer or DevTools then fail: the page's doing,
  // never counted as ours (red team: a reload loop made 5xx at will, and a job ran such a page three times). Not when
  // the browser or the page's session is gone: that is ours whatever the page did (red team, round 18).
  if (replacedItself && browserConnected && !SESSION_GONE.test(message)) {
    return new CaptureFailedError(url, DOCUMENT_REPLACED, 'page');
  }
  if (SESSION_GONE.test(message) || /Protocol error|detached/i.test(message)) {
    return new CaptureFailedError(url, 'The browser stopped during the capture');
  }
  logger.error('Capture failed', { error: error as Error });
  return new CaptureFailedError(url, 'The page could not be captured');
}
