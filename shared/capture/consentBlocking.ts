import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
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
/** Consent managers that show late are given this long after load to be found. */
const CONSENT_MIN_WAIT_MS = 400;
const POLL_MS = 100;

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
 * `window.__screenshotConsent.phase`: detected (a consent manager is there), busy (its banner is open and being
 * answered), done (answered, hidden, or nothing found).
 */
const prelude = (rules: string) => `(() => {
  if (window.autoconsentSendMessage) return;
  const state = { phase: 'idle' };
  Object.defineProperty(window, '__screenshotConsent', { value: state });
  const config = ${JSON.stringify(CONFIG)};
  const rules = { compact: ${rules} };
  window.autoconsentSendMessage = (message) => {
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
        if (message.state.lifecycle === 'nothingDetected' || message.state.lifecycle === 'done') state.phase = 'done';
        break;
    }
    return Promise.resolve();
  };
})();`;

let source: Promise<string> | undefined;

/** The injected source (autoconsent's content script and rules, about 400 KB), read once per warm process. */
function consentSource(): Promise<string> {
  source ??= (async () => {
    // The package exports its entry and rules only, so the content script is found beside the entry.
    const require = createRequire(import.meta.url);
    const dist = dirname(require.resolve('@duckduckgo/autoconsent'));
    const [script, rules] = await Promise.all([
      readFile(join(dist, 'autoconsent.playwright.js'), 'utf8'),
      readFile(require.resolve('@duckduckgo/autoconsent/rules/compact-rules.json'), 'utf8'),
    ]);
    return `${prelude(rules)}\n${script}`;
  })();
  source.catch(() => {
    source = undefined;
  });
  return source;
}

/** Installs autoconsent in every frame the page will have; call before navigation. */
export async function blockCookieBanners(page: Page): Promise<void> {
  await page.evaluateOnNewDocument(await consentSource());
}

/**
 * Waits, before the capture, until no frame has a consent manager still busy with its banner: at least
 * CONSENT_MIN_WAIT_MS after load, at most CONSENT_MAX_WAIT_MS, never past the deadline. A banner still there then
 * is hidden by autoconsent's prehiding and cosmetic rules anyway.
 */
export async function settleCookieBanners(page: Page, deadline: number): Promise<void> {
  const start = Date.now();
  const end = Math.min(start + CONSENT_MAX_WAIT_MS, deadline);
  for (;;) {
    const elapsed = Date.now() - start;
    if (Date.now() >= end) return;
    if (elapsed >= CONSENT_MIN_WAIT_MS) {
      const phases = await Promise.all(page.frames().map(phaseOf));
      if (!phases.some((phase) => phase === 'detected' || phase === 'busy')) return;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function phaseOf(frame: Frame): Promise<string | undefined> {
  return frame
    .evaluate(() => (window as { __screenshotConsent?: { phase: string } }).__screenshotConsent?.phase)
    .catch(() => undefined);
}
