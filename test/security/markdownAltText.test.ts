import { HtmlRenderer, Parser } from 'commonmark';
import { describe, expect, it } from 'vitest';
import { markdownCaptures, rendered } from '../helpers/markdownCaptures';

/**
 * Red team (round 7): an image's alt text goes into the Markdown through `plain()`, which escapes backslashes,
 * brackets, parentheses and quotes, never '<'. Turndown does not escape what a rule returns, so:
 * - an image whose src is not http(s) is written as its bare alt text: `<img src=x onerror=alert&#40;1&#41;>` is raw
 *   HTML in the Markdown (the entities keep plain() from escaping its parentheses), passed on by any renderer that passes HTML;
 * - an image kept is `![alt](src)`, whose description CommonMark parses as inline content: an HTML tag there is
 *   html_inline, which commonmark.js's HtmlRenderer (default options) writes unescaped inside the alt="…" attribute.
 *   A single-quoted attribute value in that tag carries a '"' (plain makes it `\"`, still a '"'), which ends alt="…",
 *   and the rest is an onerror attribute of the rendered <img>.
 */

const { markdownOf } = markdownCaptures();

const page = (image: string) => `<!doctype html><html><body><p>Shown text.</p><p>${image}</p></body></html>`;

describe("an image's alt text in the Markdown", () => {
  it('cannot write raw HTML when its image is left out (src not http)', async () => {
    const markdown = await markdownOf(
      page('<img src="data:," width="40" height="40" alt="<img src=x onerror=alert&amp;#40;1&amp;#41;>">'),
    );
    expect(markdown).toContain('Shown text.');
    expect(rendered(markdown).rawHtml).toEqual([]);
  });

  it("cannot break out of the rendered image's alt attribute", async () => {
    const alt = `<b x='&quot; onerror=alert\`1\` y=&quot;'>`;
    const markdown = await markdownOf(
      page(`<img src="https://example.com/a.png" width="40" height="40" alt="${alt}">`),
    );
    expect(markdown).toContain('Shown text.');
    expect(rendered(markdown).rawHtml).toEqual([]);
    const html = new HtmlRenderer().render(new Parser().parse(markdown));
    // Today: <img src="https://example.com/a.png" alt="<b x='\" onerror=alert`1` y=\"'>" />
    expect(html).not.toMatch(/<img [^>]*" onerror=/);
  });
});
