import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adaptContentScript } from '../../shared/capture/consentScript';

/**
 * The two edits to autoconsent's content script (shared/capture/consentScript.ts), on the script the installed
 * package ships. That the edited script still finds and answers consent managers is proven in real Chromium by
 * test/screenshot/cleanCaptures.test.ts.
 */
const require = createRequire(import.meta.url);
const shipped = readFileSync(
  join(dirname(require.resolve('@duckduckgo/autoconsent')), 'autoconsent.playwright.js'),
  'utf8',
);

describe("autoconsent's content script, adapted", () => {
  const adapted = adaptContentScript(shipped);

  it('is still a script that compiles', () => {
    expect(() => new Function(adapted)).not.toThrow();
  });

  it('adds its hiding rules without reading innerText', () => {
    expect(adapted).toContain('styleEl.textContent += rule;');
    expect(adapted).not.toContain('styleEl.innerText += rule;');
  });

  it('declares the heuristic patterns empty, and keeps the code around them', () => {
    expect(shipped).toContain('/accept cookies/gi');
    expect(adapted).not.toContain('/accept cookies/gi');
    expect(adapted).toMatch(/var DETECT_PATTERNS = \[\], [^;]*REJECT_PATTERNS = \[\]/);
    expect(adapted).toContain('function checkHeuristicPatterns(');
    expect(shipped.length - adapted.length).toBeGreaterThan(30_000);
  });

  it('refuses a script that no longer has the text it edits', () => {
    expect(() => adaptContentScript(shipped.replace('styleEl.innerText += rule;', ''))).toThrow(/innerText/);
    expect(() => adaptContentScript(shipped.replace('  // lib/heuristics.ts\n', ''))).toThrow(
      /heuristic-patterns/,
    );
    const withFunction = shipped.replace(
      '  // lib/heuristic-patterns.ts\n',
      '  // lib/heuristic-patterns.ts\n  function helper() {}\n',
    );
    expect(() => adaptContentScript(withFunction)).toThrow(/more than the arrays/);
  });
});
