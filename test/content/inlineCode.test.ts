import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INLINE_CODE_RULE } from '../../shared/capture/pageContent';

/**
 * Red team (round 20): Turndown's inline code rule tests the padding it needs with a regular expression that
 * backtracks quadratically on code that starts with a space and does not end with one. `<code><br>` before a long run
 * of text gives such code: a static page of 400,000 characters held its renderer 30 s, and its Markdown failed with a
 * 500 blaming scripts the page did not have. Fixed: a rule of ours (INLINE_CODE_RULE) writes the same Markdown in time
 * linear in the code. Run here with Turndown as it ships (its Node build, over the domino DOM it brings), no Chromium.
 */

interface Turndown {
  addRule(key: string, rule: unknown): void;
  turndown(html: string): string;
}
const TurndownService = createRequire(import.meta.url)('turndown') as new () => Turndown;

const ours = new TurndownService();
ours.addRule('inlineCode', new Function(`return ${INLINE_CODE_RULE}`)());
const turndowns = new TurndownService();

/** The page of the finding: `<code>` opening with a `<br>`, then `length` characters. */
const brOpenedCode = (length: number) => `<p>x<code><br>${'a'.repeat(length)}</code></p>`;

describe('inline code', () => {
  it('converts code opening with a line break in time linear in its length', () => {
    const started = performance.now();
    const markdown = ours.turndown(brOpenedCode(400_000));
    // Turndown's own rule: 1.9 s at 40,000 characters on this machine, a hundred times that here.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(markdown).toBe(`x\`   ${'a'.repeat(400_000)}\``);
  });

  it('writes what Turndown writes for code of spaces, backticks, line breaks and text', () => {
    // Not U+2028 or U+2029: Turndown's expression reads them as line ends and pads no code that holds one, where
    // CommonMark (and our rule) takes them as text.
    const code = fc.string({
      unit: fc.constantFrom(' ', '`', '``', '\n', '\r\n', '\t', 'a', '*', '<br>'),
      maxLength: 12,
    });
    fc.assert(
      fc.property(code, fc.constantFrom('', 'x', ' '), (inside, beside) => {
        const html = `<p>${beside}<code>${inside}</code>${beside}</p>`;
        expect(ours.turndown(html)).toBe(turndowns.turndown(html));
      }),
      { numRuns: 2_000 },
    );
  });

  it('leaves code blocks to the block rule', () => {
    const html = '<pre><code>const a = `b`;\n</code></pre>';
    expect(ours.turndown(html)).toBe(turndowns.turndown(html));
  });
});
