import { describe, expect, it } from 'vitest';
import { ARTICLE_PAGE } from '../helpers/articlePages';
import { markdownCaptures } from '../helpers/markdownCaptures';

/**
 * Red team (round 5): api.md 17.1 says text in an element whose `visibility` is not `visible` is left out and "a
 * child that sets it back is read". seenCopy keeps such a child, but Readability (both for the article and, since
 * it almost always finds one, for short pages too) drops every element whose inline style says
 * `visibility: hidden`, children and all: a shown link or paragraph inside one is missing from the Markdown. The same
 * page styled by a class keeps it, so what is read depends on how the page wrote its style.
 */

const { shoot } = markdownCaptures();

const PART = `<style>.folded { visibility: hidden } .shown { visibility: visible }</style>
  <div class="folded">Folded words. <p class="shown">SHOWN-BY-CLASS paragraph a reader sees.</p></div>
  <div style="visibility:hidden">Folded words. <p style="visibility:visible">SHOWN-INLINE paragraph a reader sees.</p></div>`;

describe('a shown child of an element of visibility: hidden', () => {
  it.each([
    ['the whole body', `<!doctype html><html><body><p>Shown text.</p>${PART}</body></html>`],
    ['an article', ARTICLE_PAGE.replace('<h2>Measured heights</h2>', `${PART}<h2>Measured heights</h2>`)],
  ])('is read, however its style was written, in %s', { timeout: 60_000 }, async (_, html) => {
    const response = await shoot({ html, format: 'markdown' });
    expect(response.status).toBe(200);
    const markdown = response.body.toString('utf8');
    expect(markdown).not.toContain('Folded words');
    expect(markdown).toContain('SHOWN-BY-CLASS');
    expect(markdown).toContain('SHOWN-INLINE');
  });
});
