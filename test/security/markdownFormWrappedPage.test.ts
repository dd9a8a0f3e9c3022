import { describe, expect, it } from 'vitest';
import { markdownCaptures } from '../helpers/markdownCaptures';

/**
 * Red team (round 7, honest text dropped): pageContent.ts has Turndown remove every `form` element with its whole
 * content. ASP.NET Web Forms pages (and many CMS templates) wrap the whole body in one <form>: when Readability
 * finds no article there (a short page), the whole-body fallback is that form, and the Markdown is empty (an
 * article inside the form is read: Readability picks a node within it). The form's controls (input, select, button, textarea) are
 * what says nothing; the text around them is the page. Likewise a <button>'s own text: an accordion's questions.
 */

const { markdownOf } = markdownCaptures();

describe('text Turndown removes with form controls', () => {
  it('keeps its text, when there is no article', async () => {
    const markdown = await markdownOf(
      '<!doctype html><html><body><form method="post" action="./Default.aspx" id="form1"><input type="hidden" name="__VIEWSTATE" value="x"><h2>Opening hours</h2><p>Monday to Friday, 9 to 17.</p></form></body></html>',
    );
    expect(markdown).toContain('Monday to Friday');
  });

  // The WAI-ARIA accordion pattern: each question is a <button> in a heading; removed with the button.
  it('keeps the questions of an accordion, which are buttons', async () => {
    const markdown = await markdownOf(
      '<!doctype html><html><body><h2>Questions</h2><h3><button aria-expanded="true">How long does delivery take?</button></h3><p>Two working days.</p></body></html>',
    );
    expect(markdown).toContain('Two working days.');
    expect(markdown).toContain('How long does delivery take?');
  });
});
