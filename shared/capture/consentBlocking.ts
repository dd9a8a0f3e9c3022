import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { filterCompactRules, type IndexedCMPRuleset } from '@duckduckgo/autoconsent';
import type { Frame, Page } from 'puppeteer-core';

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
/**
 * autoconsent reports when it starts looking for consent managers, but not when a look found nothing (it then
 * waits for the page to change): it is taken to have found nothing once it has been quiet this long.
 */
const QUIET_MS = 60;
const POLL_MS = 20;

const CONFIG = {
  enabled: true,
  autoAction: 'optOut',
  disabledCmps: [],
  enablePrehide: true,
  enableCosmeticRules: true,
  enableGeneratedRules: true,
  detectRetries: 20,
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
 * answered) or done (answered, hidden, or nothing found); `started` that it has begun looking, `last` when it last
 * said anything.
 */
const prelude = (mainRules: string, frameRules: string) => `(() => {
  if (window.autoconsentSendMessage) return;
  const state = { phase: 'idle', started: false, last: 0 };
  Object.defineProperty(window, '__screenshotConsent', { value: state });
  const config = ${JSON.stringify(CONFIG)};
  // Strings parsed on use: V8 reads a JSON string much faster than the same object as a literal.
  const rules = { compact: JSON.parse(window === window.top ? ${JSON.stringify(mainRules)} : ${JSON.stringify(frameRules)}) };
  window.autoconsentSendMessage = (message) => {
    state.last = performance.now();
    switch (message.type) {
      case 'init':
        setTimeout(() => window.autoconsentReceiveMessage({ type: 'initResp', config, rules }));
        break;
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
  script: string;
  rules: IndexedCMPRuleset;
  /** The rules that run in frames, whatever their address (autoconsent checks each rule's own pattern). */
  frameRules: string;
}

let assets: Promise<ConsentAssets> | undefined;

/** autoconsent's content script and rules, read once per warm process. */
function consentAssets(): Promise<ConsentAssets> {
  assets ??= (async () => {
    // The package exports its entry and rules only, so the content script is found beside the entry.
    const require = createRequire(import.meta.url);
    const dist = dirname(require.resolve('@duckduckgo/autoconsent'));
    const [script, text] = await Promise.all([
      readFile(join(dist, 'autoconsent.playwright.js'), 'utf8'),
      readFile(require.resolve('@duckduckgo/autoconsent/rules/compact-rules.json'), 'utf8'),
    ]);
    const rules = JSON.parse(text) as IndexedCMPRuleset;
    const { v, s, r, index } = rules;
    const frameRules = JSON.stringify({
      v,
      s: s.slice(0, index.frameStringEnd),
      r: r.slice(index.frameRuleRange[0], index.frameRuleRange[1]),
    });
    return { script, rules, frameRules };
  })();
  assets.catch(() => {
    assets = undefined;
  });
  return assets;
}

/**
 * Installs autoconsent in every frame the page will have; call before navigation. The top frame gets the generic
 * rules and those for the site of `url` (a quarter of all), other frames the rules that run in frames.
 */
export async function blockCookieBanners(page: Page, url: string): Promise<void> {
  const { script, rules, frameRules } = await consentAssets();
  const mainRules = JSON.stringify(filterCompactRules(rules, { url, mainFrame: true }));
  await page.evaluateOnNewDocument(`${prelude(mainRules, frameRules)}\n${script}`);
}

/**
 * Waits, before the capture, until autoconsent has looked at the page and no consent manager it found is still busy
 * with its banner: at most CONSENT_MAX_WAIT_MS, never past the deadline. A page without one costs a look (tens of
 * milliseconds). Banners are hidden from autoconsent's start anyway (it prehides the elements of every consent
 * manager it has rules for, and hides open banners with cosmetic rules); the wait is for the refusal to be made.
 */
export async function settleCookieBanners(page: Page, deadline: number): Promise<void> {
  const end = Math.min(Date.now() + CONSENT_MAX_WAIT_MS, deadline);
  while (Date.now() < end) {
    const frames = await Promise.all(page.frames().map(consentStateOf));
    const busy = frames.some((state) => state?.phase === 'detected' || state?.phase === 'busy');
    const top = frames[0];
    if (!busy && top && (top.phase === 'done' || (top.started && top.quietFor >= QUIET_MS))) return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

interface ConsentState {
  phase: string;
  started: boolean;
  /** Milliseconds since autoconsent last said anything. */
  quietFor: number;
}

function consentStateOf(frame: Frame): Promise<ConsentState | undefined> {
  return frame
    .evaluate(() => {
      const state = (window as { __screenshotConsent?: { phase: string; started: boolean; last: number } })
        .__screenshotConsent;
      return (
        state && { phase: state.phase, started: state.started, quietFor: performance.now() - state.last }
      );
    })
    .catch(() => undefined);
}
