import { describe, expect, it } from 'vitest';
import { IN_ARTICLE, markdownCaptures, rendered, WHOLE_BODY } from '../helpers/markdownCaptures';

/**
 * Red team (round 7): the GFM plugin (turndown-plugin-gfm 1.0.2) calls `turndown.keep()` for every table whose
 * first row is not a heading row, and Turndown writes a kept node as its outerHTML: the page's own markup, raw,
 * none of our rules applied (no link filter, no escaping). A two-cell table with no <th> puts into the Markdown a
 * javascript: link and an <img onerror> that any renderer passing HTML makes live, and that an agent reads as the
 * page's instructions. Layout tables without headings are common on honest pages too, which then read as HTML.
 */

const { markdownOf } = markdownCaptures();

const ROWS = `<tr><td>Step one</td><td><a href="JavaScript:alert(document.domain)">Continue</a></td></tr>
<tr><td>Step two</td><td><img src="https://example.com/x.png" width="20" height="20" onerror="alert(2)" alt="x"></td></tr>`;
const MORE_ROWS = `${'<tr><td>Step more</td><td>The measured heights were recorded with care.</td></tr>'.repeat(5)}`;
/** Small enough that Readability finds no article: the whole body is read. */
const LAYOUT_TABLE = `<table>${ROWS}</table>`;
/** Readability keeps a table it takes for data (a caption) in the article it picks. */
const DATA_TABLE = `<table><caption>Steps</caption>${ROWS}${MORE_ROWS}</table>`;

describe('a table without a heading row', () => {
  it.each([
    ['the whole body', WHOLE_BODY(LAYOUT_TABLE)],
    ['an article', IN_ARTICLE(DATA_TABLE)],
  ] as const)('is not written as the raw HTML of the page, in %s', async (_, page) => {
    const markdown = await markdownOf(page);
    expect(markdown).toContain('Step one');
    expect(rendered(markdown).rawHtml).toEqual([]);
    expect(markdown).not.toMatch(/javascript:|onerror/i);
  });
});
