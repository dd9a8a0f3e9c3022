import { HtmlRenderer, Parser } from 'commonmark';
import { describe, expect, it } from 'vitest';
import { markdownCaptures } from '../helpers/markdownCaptures';

/**
 * Red team (round 7, honest text mangled): Turndown escapes Markdown's punctuation and bf9f662 added '<', but not
 * '&'. Page text that shows an entity reference as text (a page explaining HTML: "write &copy; for ©") is written
 * as is, and CommonMark decodes it: the renderer shows "write © for ©", and "&lt;b&gt;" as "<b>". A backslash
 * before '&' (CommonMark's escape) keeps the text the page showed.
 */

const { shoot } = markdownCaptures();

describe('page text that reads as an entity reference', () => {
  it('is rendered as the page showed it', async () => {
    const response = await shoot({
      html: '<!doctype html><html><body><p>Write &amp;copy; for the sign, and &amp;lt;b&amp;gt; for a tag.</p></body></html>',
      format: 'markdown',
    });
    expect(response.status).toBe(200);
    const html = new HtmlRenderer().render(new Parser().parse(response.body.toString('utf8')));
    // Today: <p>Write © for the sign, and &lt;b&gt; for a tag.</p> (the entities decoded once too often)
    expect(html).toContain('Write &amp;copy; for the sign, and &amp;lt;b&amp;gt; for a tag.');
  });
});
