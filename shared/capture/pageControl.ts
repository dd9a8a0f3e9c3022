import type { CDPSession, Page, Protocol } from 'puppeteer-core';
import { answerWithin } from './answerWithin';
import type { IsolatedWorld } from './pageScripts';

/** The name of the isolated world our page scripts run in. */
const WORLD_NAME = 'screenshot-service';
/**
 * DevTools' and puppeteer's words for a call whose script context went away under it: the frame's document was
 * replaced (with the frame still there; a closed page or browser says otherwise).
 */
export const CONTEXT_GONE =
  /Execution context was destroyed|Inspected target navigated or closed|Cannot find context with specified id/;

/** The mark our world leaves on a document (markDocument). */
const DOCUMENT_MARK = `Symbol.for('${WORLD_NAME}:document')`;

/** Navigations that keep the document (history.pushState, fragment links): nothing to wait for. */
const SAME_DOCUMENT = new Set(['historySameDocument', 'sameDocument']);

/**
 * One of our own scripts failed on the page's document: they are ours and tested, so what they could not read is
 * what the page made of its document (its root removed, a DOM deeper than a reader's stack). The capture fails as
 * the page's, never as ours (red team: such pages counted in the 5xx alarms that page operators and roll deploys
 * back).
 */
export class PageScriptError extends Error {
  constructor(description: string) {
    super(`Page script failed: ${description}`);
    this.name = 'PageScriptError';
  }
}

/**
 * Our own DevTools session on a captured page, beside puppeteer's:
 * - it watches and, once the page is ready to be captured, holds the main frame's navigations. A page may navigate
 *   itself after its load event (a script setting `location`, a reload loop, a meta refresh), and an image requested
 *   while its document is being replaced is never answered. So before the capture, new main-frame navigations are
 *   refused at the network stage (the page stays as it stands; frames inside it load as usual), a navigation
 *   already under way is waited for, and one that needs no request is reported (whenReplaced);
 * - it runs our page scripts in an isolated world (pageScripts.ts);
 * - it sets what the page learns of the browser (user agent, client hints, languages);
 * - it tells whether the page's renderer still answers.
 */
export class PageControl implements IsolatedWorld {
  private loading = false;
  /** The style sheets being added (addStyleSheet), in turn. */
  private styling: Promise<void> = Promise.resolve();
  private waiting: (() => void)[] = [];
  /** The loader of the main frame's current document. */
  private committed: string | undefined;
  /** The loader of the main frame's latest cross-document navigation, started or committed. */
  private latest: string | undefined;
  /** A document whose own loading is not waited for (`waitUntil: domcontentloaded`). */
  private accepted: string | undefined;
  /** Every cross-document navigation of the main frame started before the hold: one of them may still commit. */
  private readonly startedBeforeHold = new Set<string>();
  private held = false;
  private onReplaced: () => void = () => undefined;
  /**
   * Documents the main frame committed since the capture's own navigation started, that one included; undefined
   * before it. A `javascript:` URL's document keeps its loader, so commits are counted, not loaders compared.
   */
  private commitsSinceOwn: number | undefined;
  private readonly childNavigationListeners = new Set<() => void>();
  /** Whether markDocument() marked the document the capture loaded. */
  private marked = false;

  private constructor(
    private readonly session: CDPSession,
    private readonly mainFrameId: string,
  ) {}

  /** Attaches to a fresh page (off the request path: spare tabs are prepared ahead). */
  static async attach(page: Page): Promise<PageControl> {
    const session = await page.createCDPSession();
    const { frameTree } = await session.send('Page.getFrameTree');
    const navigation = new PageControl(session, frameTree.frame.id);
    session.on('Page.frameStartedLoading', ({ frameId }) => {
      if (frameId === navigation.mainFrameId) navigation.loading = true;
    });
    session.on('Page.frameStoppedLoading', ({ frameId }) => {
      if (frameId === navigation.mainFrameId) {
        navigation.loading = false;
        navigation.wake();
      }
    });
    session.on('Page.frameStartedNavigating', ({ frameId, loaderId, navigationType }) => {
      if (frameId !== navigation.mainFrameId) {
        for (const listener of navigation.childNavigationListeners) listener();
        return;
      }
      if (!SAME_DOCUMENT.has(navigationType)) {
        navigation.latest = loaderId;
        if (!navigation.held) navigation.startedBeforeHold.add(loaderId);
      }
    });
    session.on('Page.frameNavigated', ({ frame }) => {
      if (frame.id !== navigation.mainFrameId) return;
      if (navigation.commitsSinceOwn !== undefined) navigation.commitsSinceOwn += 1;
      // Commits may be told after a later navigation started: any started before the hold may still commit.
      if (
        navigation.held &&
        frame.loaderId !== navigation.committed &&
        !navigation.startedBeforeHold.has(frame.loaderId)
      ) {
        navigation.onReplaced();
      }
      navigation.committed = frame.loaderId;
      navigation.latest = frame.loaderId;
    });
    await session.send('Page.enable');
    return navigation;
  }

  /**
   * Marks the document the main frame shows now, in our isolated world, where the page can neither see nor remove
   * the mark: documentReplaced() then tells whether it still shows that one.
   */
  async markDocument(): Promise<void> {
    // Marked first: a document replaced while it is being marked has no mark either.
    this.marked = true;
    await this.evaluate(`void (document[${DOCUMENT_MARK}] = true)`);
  }

  /**
   * Whether the document marked by markDocument() was replaced by another, however (a `javascript:` URL's string
   * becomes a document with no navigation event: red team, round 18). Undefined when the page does not answer.
   */
  async documentReplaced(): Promise<boolean | undefined> {
    if (!this.marked) return false;
    const marked = await answerWithin(
      this.evaluate<boolean>(`document[${DOCUMENT_MARK}] === true`).catch((error: unknown) =>
        // Our world's context gone between its creation and the call: the document went with it.
        CONTEXT_GONE.test(error instanceof Error ? error.message : String(error)) ? false : undefined,
      ),
      1_000,
    );
    return marked === 'late' || marked === undefined ? undefined : !marked;
  }

  /**
   * Calls `listener` each time a frame inside the page starts a navigation (a `srcdoc` set anew included, which
   * needs no request and may be cancelled by the next before it commits); returns what stops it.
   */
  onChildNavigation(listener: () => void): () => void {
    this.childNavigationListeners.add(listener);
    return () => this.childNavigationListeners.delete(listener);
  }

  /** The capture's own navigation starts now: the first document the main frame commits from here is its. */
  ownNavigationStarts(): void {
    this.commitsSinceOwn = 0;
  }

  /**
   * Whether the main frame committed another document since the capture's own: the page replaced it itself (a reload
   * loop, a script setting `location`, a `javascript:` URL), so a document call that failed on it before the hold may
   * be the page's doing. A navigation that only started (one answered 204) replaced nothing (red team, round 18).
   */
  get navigatedItself(): boolean {
    return (this.commitsSinceOwn ?? 0) > 1;
  }

  /**
   * The document the main frame shows now is ready as it stands, still loading or not (`waitUntil:
   * domcontentloaded`): settled() waits for its load event only if the page navigates away from it.
   */
  acceptLoading(): void {
    this.accepted = this.committed;
  }

  /** From now on, the main frame stays on its document: navigation requests are aborted before they are sent. */
  async hold(): Promise<void> {
    this.session.on('Fetch.requestPaused', (event: Protocol.Fetch.RequestPausedEvent) => {
      const refused = event.frameId === this.mainFrameId;
      const answer = refused
        ? this.session.send('Fetch.failRequest', { requestId: event.requestId, errorReason: 'Aborted' })
        : this.session.send('Fetch.continueRequest', { requestId: event.requestId });
      // The page may be closing; a request it no longer has needs no answer.
      answer.catch(() => undefined);
      if (refused) {
        // That navigation will not happen: the document shown stays.
        this.latest = this.committed;
        this.wake();
      }
    });
    await this.session.send('Fetch.enable', {
      patterns: [{ resourceType: 'Document', requestStage: 'Request' }],
    });
    this.held = true;
  }

  /** True once hold() has taken effect. */
  get isHeld(): boolean {
    return this.held;
  }

  /**
   * Calls `listener` if, once navigations are held, the main frame still commits another document: one that needs
   * no network request (about:blank, a blob: URL, back through the page cache) cannot be held back. An image or a
   * script asked of the document it replaced is never answered, so the capture stops at once.
   */
  whenReplaced(listener: () => void): void {
    this.onReplaced = listener;
  }

  /**
   * Resolves once the main frame is not loading (a navigation under way has reached its load event, or failed), or
   * shows the document acceptLoading() accepted and is not navigating away from it.
   */
  settled(): Promise<void> {
    if (this.isSettled()) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /**
   * Evaluates source text (an expression, awaited if it is a promise) in a world of its own over the main frame's
   * current document, and returns its value.
   */
  async evaluate<T>(source: string): Promise<T> {
    const { executionContextId } = await this.session.send('Page.createIsolatedWorld', {
      frameId: this.mainFrameId,
      worldName: WORLD_NAME,
    });
    const { result, exceptionDetails } = await this.session.send('Runtime.evaluate', {
      expression: source,
      contextId: executionContextId,
      awaitPromise: true,
      returnByValue: true,
    });
    if (exceptionDetails) {
      throw new PageScriptError(exceptionDetails.exception?.description ?? exceptionDetails.text);
    }
    return result.value as T;
  }

  /** The user agent, its client hints and Accept-Language the page sees from now on (browserIdentity.ts). */
  async overrideIdentity(identity: Protocol.Emulation.SetUserAgentOverrideRequest): Promise<void> {
    await this.session.send('Emulation.setUserAgentOverride', identity);
  }

  /**
   * Adds a style sheet to a frame's document (the main frame's by default) that only the browser holds (DevTools' own, as the Styles panel
   * adds): the page's scripts neither see it nor can take it away, as they can an adopted one by assigning
   * `document.adoptedStyleSheets` (red team). The domains it needs are enabled for it alone; the sheet stays.
   */
  addStyleSheet(text: string, frameId = this.mainFrameId): Promise<void> {
    // One at a time: one call's disabling must not come between another's enabling and its sheet (frames at once).
    const added = this.styling.then(async () => {
      await this.session.send('DOM.enable');
      await this.session.send('CSS.enable');
      try {
        const { styleSheetId } = await this.session.send('CSS.createStyleSheet', { frameId, force: true });
        await this.session.send('CSS.setStyleSheetText', { styleSheetId, text });
      } finally {
        await this.session.send('CSS.disable');
        await this.session.send('DOM.disable');
      }
    });
    this.styling = added.catch(() => undefined);
    return added;
  }

  /** The default locale of the page's Intl, or the browser's own when undefined. */
  async overrideLocale(locale: string | undefined): Promise<void> {
    await this.session.send('Emulation.setLocaleOverride', locale ? { locale } : {});
  }

  /** What the page's own isolate holds (its frames share it): its heaps and array buffers (pageMemoryGuard.ts). */
  heapUsage(): Promise<Protocol.Runtime.GetHeapUsageResponse> {
    return this.session.send('Runtime.getHeapUsage');
  }

  /** True when the page's renderer answers within `ms`: false means its scripts keep it busy. */
  async responsive(ms: number): Promise<boolean> {
    const answered = this.session.send('Runtime.evaluate', { expression: '0' }).then(
      () => true,
      () => true,
    );
    return (await answerWithin(answered, ms)) !== 'late';
  }

  private isSettled(): boolean {
    return !this.loading || (this.accepted !== undefined && this.latest === this.accepted);
  }

  private wake(): void {
    if (!this.isSettled()) return;
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
  }
}
