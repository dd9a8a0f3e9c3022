import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { filterCompactRules, type IndexedCMPRuleset } from '@duckduckgo/autoconsent';
import type { Frame, Page } from 'puppeteer-core';
import { adaptContentScript } from './consentScript';

/**
 * `blockCookieBanners`: DuckDuckGo's autoconsent, with the rules it ships, in every frame of the page. It finds
 * the consent manager (hundreds of them, by rule), hides its banner at once, then answers it the way that refuses
 * tracking where the page allows, clicking as a person would.
 *
 * It runs in the page's own world with autoconsent's `isMainWorld` setting: its rules read consent managers'
 * JavaScript objects (`window.__tcfapi`, `Didomi`, ...), which another world could not see. Its messages are
 * answered in the page too (the rules are part of the injected source), so there is no channel back to this
 * process: a page that tampers with it can only spoil its own capture.
 */

/** How long a capture waits, at most, for a banner that was found to be dealt with. */
export const CONSENT_MAX_WAIT_MS = 4_000;
/** How often a frame's own wait looks at autoconsent's state (in the page, so no round trip per look). */
const CHECK_MS = 5;
/**
 * autoconsent reports when it starts looking for consent managers, but not when a look found nothing (it then
 * waits for the page to change and looks again). With its performance logging on it marks the end of each of a
 * look's stages; the last stage's measure tells that the first look is over.
 */
const LOOK_DONE_MEASURE = 'findCmp_heuristic';
/**
 * A look that has not ended after autoconsent has been silent this long will not end (its code failed on the page):
 * longer than the 500 ms it may wait for an idle moment before it looks.
 */
const GIVE_UP_QUIET_MS = 1_000;

const CONFIG = {
  enabled: true,
  autoAction: 'optOut',
  disabledCmps: [],
  enablePrehide: true,
  enableCosmeticRules: true,
  enableGeneratedRules: true,
  // Off, as by default; the script we hand over has no heuristic patterns (consentScript.ts).
  enableHeuristicDetection: false,
  heuristicMode: 'off',
  detectRetries: 20,
  performanceLoggingEnabled: true,
  isMainWorld: true,
  logs: {
    lifecycle: false,
    rulesteps: false,
    detectionsteps: false,
    evals: false,
    errors: false,
    messages: false,
    waits: false,
  },
};

/**
 * Answers autoconsent's `init` with the configuration and rules, and keeps what it reports in
 * `window.__screenshotConsent`: `phase` is detected (a consent manager is there), busy (its banner is open and being
 * answered) or done (answered, hidden, or nothing found); `started` that it is running in this frame, `last` when it
 * last said anything. The top frame gets the generic rules, or `siteRules` when a later script of ours has set them
 * (the generic ones and those written for the site); other frames get the rules that run in frames. The rules are
 * read at `init`, which is answered after every script registered for the new document has run.
 */
const prelude = (genericRules: string, frameRules: string) => `(() => {
  if (window.autoconsentSendMessage) return;
  const state = { phase: 'idle', started: false, last: 0, siteRules: undefined };
  Object.defineProperty(window, '__screenshotConsent', { value: state });
  const config = ${JSON.stringify(CONFIG)};
  // Strings parsed on use: V8 reads a JSON string much faster than the same object as a literal.
  const rules = () => ({
    compact: JSON.parse(window === window.top ? state.siteRules ?? ${JSON.stringify(genericRules)} : ${JSON.stringify(frameRules)}),
  });
  window.autoconsentSendMessage = (message) => {
    state.last = performance.now();
    switch (message.type) {
      case 'init': {
        const answer = () => window.autoconsentReceiveMessage({ type: 'initResp', config, rules: rules() });
        // Answered once the root element exists (autoconsent has sent init from its constructor, before it is
        // ready for the answer): it then prehides banners while the parser adds the page's elements. Answered
        // earlier, it would put that off to DOMContentLoaded and restyle the whole page then, a few ms more.
        if (document.documentElement) setTimeout(answer);
        else {
          const observer = new MutationObserver(() => {
            if (!document.documentElement) return;
            observer.disconnect();
            answer();
          });
          observer.observe(document, { childList: true });
        }
        break;
      }
      case 'cmpDetected':
        if (state.phase === 'idle') state.phase = 'detected';
        break;
      case 'popupFound':
        state.phase = 'busy';
        break;
      case 'optOutResult':
      case 'autoconsentDone':
        state.phase = 'done';
        break;
      case 'report':
        if (message.state.lifecycle !== 'loading' && message.state.lifecycle !== 'initialized') state.started = true;
        if (message.state.lifecycle === 'nothingDetected' || message.state.lifecycle === 'done') state.phase = 'done';
        break;
    }
    return Promise.resolve();
  };
})();`;

interface ConsentAssets {
  /** The prelude and autoconsent's content script: the same for every capture. */
  script: string;
  rules: IndexedCMPRuleset;
}

let assets: Promise<ConsentAssets> | undefined;

/** autoconsent's content script and rules, read once per warm process. */
function consentAssets(): Promise<ConsentAssets> {
  assets ??= (async () => {
    // The package exports its entry and rules only, so the content script is found beside the entry.
    const require = createRequire(import.meta.url);
    const dist = dirname(require.resolve('@duckduckgo/autoconsent'));
    const [contentScript, text] = await Promise.all([
      readFile(join(dist, 'autoconsent.playwright.js'), 'utf8'),
      readFile(require.resolve('@duckduckgo/autoconsent/rules/compact-rules.json'), 'utf8'),
    ]);
    const rules = JSON.parse(text) as IndexedCMPRuleset;
    const { v, s, r, index } = rules;
    const generic = { v, s: s.slice(0, index.genericStringEnd), r: r.slice(...index.genericRuleRange) };
    const frame = { v, s: s.slice(0, index.frameStringEnd), r: r.slice(...index.frameRuleRange) };
    const script = `${prelude(JSON.stringify(generic), JSON.stringify(frame))}\n${adaptContentScript(contentScript)}`;
    return { script, rules };
  })();
  assets.catch(() => {
    assets = undefined;
  });
  return assets;
}

/**
 * Registers autoconsent for every frame of every document the page will load, and answers the registration's id
 * (which removes it again). Its 210 KB cost tens of milliseconds to hand to the browser, so a page prepared ahead of
 * a capture gets it then; the capture adds the site's own rules (addSiteConsentRules).
 */
export async function addConsentScript(page: Page): Promise<string> {
  const { script } = await consentAssets();
  return (await page.evaluateOnNewDocument(script)).identifier;
}

/**
 * Before navigation: autoconsent on the page or not, as `wanted`, for a page that was prepared with the script
 * registered as `registered` (or without it).
 */
export async function setCookieBannerBlocking(
  page: Page,
  url: string,
  wanted: boolean,
  registered: string | undefined,
): Promise<void> {
  if (!wanted) {
    if (registered) await page.removeScriptToEvaluateOnNewDocument(registered);
    return;
  }
  // In this order: the site's rules are handed to the prelude, which must have run first.
  if (!registered) await addConsentScript(page);
  await addSiteConsentRules(page, url);
}

/**
 * For a `url` that autoconsent has rules of its own for (three quarters of the rules are for one site each), hands
 * the top frame the generic rules and those; call before navigation. Nothing to send for any other site.
 */
async function addSiteConsentRules(page: Page, url: string): Promise<void> {
  const { rules } = await consentAssets();
  const forUrl = filterCompactRules(rules, { url, mainFrame: true });
  const [genericStart, genericEnd] = rules.index.genericRuleRange;
  if (forUrl.r.length === genericEnd - genericStart) return;
  const text = JSON.stringify(JSON.stringify(forUrl));
  await page.evaluateOnNewDocument(
    `if (window === window.top) window.__screenshotConsent.siteRules = ${text};`,
  );
}

/**
 * Waits, before the capture, until autoconsent has looked at each frame once and no consent manager it found is
 * still busy with its banner: at most CONSENT_MAX_WAIT_MS, never past the deadline. A page without one costs the
 * look (about 10 ms). Banners are hidden from autoconsent's start anyway (it prehides the elements of every consent
 * manager it has rules for, and hides open banners with cosmetic rules); the wait is for the refusal to be made.
 * Frames that appear meanwhile are waited for too.
 */
export async function settleCookieBanners(page: Page, deadline: number): Promise<void> {
  const end = Math.min(Date.now() + CONSENT_MAX_WAIT_MS, deadline);
  const waited = new Set<Frame>();
  for (;;) {
    const frames = page.frames().filter((frame) => !waited.has(frame));
    const left = end - Date.now();
    if (frames.length === 0 || left <= 0) return;
    await Promise.all(frames.map((frame) => consentSettledIn(frame, frame === page.mainFrame(), left)));
    for (const frame of frames) waited.add(frame);
  }
}

/**
 * Resolves when autoconsent in this frame is done (answered, hidden, or nothing found), or has looked once without
 * finding a consent manager (or gone silent before that look ended: GIVE_UP_QUIET_MS), or after `timeoutMs`. Not
 * waited for: a frame other than the top whose autoconsent has not started (no document of its own yet, or none of
 * ours), and a document that is not HTML (an SVG or XML file: no banner, and autoconsent does not run there). Source
 * text, not a function: see pageScripts.ts on transpilers that keep names.
 */
function consentSettledIn(frame: Frame, top: boolean, timeoutMs: number): Promise<void> {
  const wait = `new Promise((resolve) => {
    const end = performance.now() + ${timeoutMs};
    const check = () => {
      const state = window.__screenshotConsent;
      const settled =
        (${!top} && !(state && state.started)) ||
        document.documentElement?.namespaceURI !== 'http://www.w3.org/1999/xhtml' ||
        (state && state.phase === 'done') ||
        (state && state.phase === 'idle' && state.started &&
          (performance.getEntriesByName(${JSON.stringify(LOOK_DONE_MEASURE)}, 'measure').length > 0 ||
            performance.now() - state.last >= ${GIVE_UP_QUIET_MS}));
      if (settled || performance.now() >= end) resolve(undefined);
      else setTimeout(check, ${CHECK_MS});
    };
    check();
  })`;
  return frame.evaluate(wait).then(
    () => undefined,
    () => undefined,
  );
}
