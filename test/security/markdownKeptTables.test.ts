import { Parser } from 'commonmark';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTICLE_PAGE } from '../helpers/articlePages';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 7): the GFM plugin (turndown-plugin-gfm 1.0.2) calls `turndown.keep()` for every table whose
 * first row is not a heading row, and Turndown writes a kept node as its outerHTML: the page's own markup, raw,
 * none of our rules applied (no link filter, no escaping). A two-cell table with no <th> puts into the Markdown a
 * javascript: link and an <img onerror> that any renderer passing HTML makes live, and that an agent reads as the
 * page's instructions. Layout tables without headings are common on honest pages too, which then read as HTML.
 */

let harness: ScreenshotHarness;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;

beforeAll(async () => {
  harness = await startScreenshotHarness();
  account = await harness.newAccount();
}, 120_000);
afterAll(async () => {
  await harness?.close();
});

async function markdownOf(html: string): Promise<string> {
  const response = await harness.shoot(account.apiKey, { html, format: 'markdown' });
  expect(response.status).toBe(200);
  return response.body.toString('utf8');
}

function rawHtmlOf(markdown: string): string[] {
  const walker = new Parser().parse(markdown).walker();
  const rawHtml: string[] = [];
  for (let step = walker.next(); step; step = walker.next()) {
    const { node, entering } = step;
    if (entering && (node.type === 'html_inline' || node.type === 'html_block'))
      rawHtml.push(node.literal ?? '');
  }
  return rawHtml;
}

const ROWS = `<tr><td>Step one</td><td><a href="JavaScript:alert(document.domain)">Continue</a></td></tr>
<tr><td>Step two</td><td><img src="https://example.com/x.png" width="20" height="20" onerror="alert(2)" alt="x"></td></tr>`;
const MORE_ROWS = `${'<tr><td>Step more</td><td>The measured heights were recorded with care.</td></tr>'.repeat(5)}`;
/** Small enough that Readability finds no article: the whole body is read. */
const LAYOUT_TABLE = `<table>${ROWS}</table>`;
/** Readability keeps a table it takes for data (a caption) in the article it picks. */
const DATA_TABLE = `<table><caption>Steps</caption>${ROWS}${MORE_ROWS}</table>`;
const WHOLE_BODY = (part: string) => `<!doctype html><html><body><p>Shown text.</p>${part}</body></html>`;
const IN_ARTICLE = (part: string) =>
  ARTICLE_PAGE.replace('<h2>Measured heights</h2>', `${part}<h2>Measured heights</h2>`);

describe('a table without a heading row', () => {
  it.each([
    ['the whole body', WHOLE_BODY(LAYOUT_TABLE)],
    ['an article', IN_ARTICLE(DATA_TABLE)],
  ] as const)('is not written as the raw HTML of the page, in %s', async (_, page) => {
    const markdown = await markdownOf(page);
    expect(markdown).toContain('Step one');
    expect(rawHtmlOf(markdown)).toEqual([]);
    expect(markdown).not.toMatch(/javascript:|onerror/i);
  });
});
