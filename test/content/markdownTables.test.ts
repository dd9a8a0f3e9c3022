import { describe, expect, it } from 'vitest';
import { markdownCaptures } from '../helpers/markdownCaptures';

/**
 * Red team (round 30): tables in Markdown. A page laid out in a table (newsletters, older sites) came back as one
 * line, its headings, lists and code run together, a data table inside it lost; and the rule that writes a cell as
 * one line backtracked quadratically on a long run of spaces without a newline (300,000 no-break spaces in a static
 * page held the renderer 30 s and failed, blamed on scripts the page did not have).
 */

const { markdownOf } = markdownCaptures();

const lines = (markdown: string) => markdown.split('\n').map((line) => line.trimEnd());

const NEWSLETTER = `<h1>Release notes</h1>
<p>This release brings many changes, improvements, and fixes to the product that you use every day.</p>
<h2>New features</h2>
<ul><li>Faster exports, up to twice as fast</li><li>Dark mode, everywhere</li></ul>
<pre><code>npm install thing@2
thing --migrate</code></pre>
<table><tr><th>Item</th><th>Price</th></tr><tr><td>Foo</td><td>1</td></tr></table>`;

describe('Markdown of tables', () => {
  it('writes a layout table as the blocks its cells hold, a data table inside it as a GFM table', async () => {
    const markdown = lines(
      await markdownOf(`<!doctype html><title>Newsletter</title><body><table width="100%"><tr><td>${NEWSLETTER}</td>
<td><p>A sidebar paragraph, with <a href="https://example.com/docs">a link</a>.</p></td></tr></table></body>`),
    );
    expect(markdown).toEqual(
      expect.arrayContaining([
        '## New features',
        expect.stringMatching(/^- +Faster exports, up to twice as fast$/),
        expect.stringMatching(/^- +Dark mode, everywhere$/),
        '```',
        'npm install thing@2',
        'thing --migrate',
        '| Item | Price |',
        '| --- | --- |',
        '| Foo | 1 |',
        'A sidebar paragraph, with [a link](https://example.com/docs).',
      ]),
    );
    expect(markdown.some((line) => line.startsWith('|') && line.includes('Release notes'))).toBe(false);
  });

  it('takes the first row of a data table without a heading row as its heading', async () => {
    const markdown = lines(
      await markdownOf(`<!doctype html><body><p>Prices.</p><table><tr><td>Tea</td><td>2</td></tr>
<tr><td>Coffee</td><td>3</td></tr></table></body>`),
    );
    const table = markdown.filter((line) => line.startsWith('|'));
    expect(table).toEqual(['| Tea | 2 |', '| --- | --- |', '| Coffee | 3 |']);
  });

  // Review (session 31): a table of one paragraph a cell (as Word and Google Docs write them) was taken for layout,
  // and a title row spanning the columns made a table of one column, whose other columns GFM drops.
  it('keeps a table of one paragraph a cell, and a title row spanning the columns, as GFM tables of every column', async () => {
    const markdown = lines(
      await markdownOf(`<!doctype html><body><p>Plans.</p><table>
<tr><td><p>Plan</p></td><td><p>Price</p></td></tr><tr><td><p>Basic</p></td><td><p>5 USD</p></td></tr></table>
<table><tr><td colspan="2">Totals</td></tr><tr><td>Tea</td><td>2</td></tr></table></body>`),
    );
    expect(markdown.filter((line) => line.startsWith('|'))).toEqual([
      '| Plan | Price |',
      '| --- | --- |',
      '| Basic | 5 USD |',
      '| Totals | |',
      '| --- | --- |',
      '| Tea | 2 |',
    ]);
  });

  it('writes a table the page calls presentation as its cells, and a caption as a paragraph of its own', async () => {
    const markdown = lines(
      await markdownOf(`<!doctype html><body><p>Intro.</p>
<table role="presentation"><tr><td>Left side</td><td>Right side</td></tr><tr><td>Low left</td><td>Low right</td></tr></table>
<table><caption>Prices 2026</caption><tr><th>Item</th><th>Price</th></tr><tr><td>Tea</td><td>2</td></tr></table></body>`),
    );
    expect(markdown.some((line) => line.includes('Left side') && line.includes('|'))).toBe(false);
    expect(markdown).toEqual(expect.arrayContaining(['Left side', 'Right side', 'Low left', 'Low right']));
    const caption = markdown.indexOf('Prices 2026');
    expect(markdown.slice(caption, caption + 3)).toEqual(['Prices 2026', '', '| Item | Price |']);
  });

  it('writes a cell of a long run of spaces without a newline in linear time', async () => {
    const page = `<!doctype html><body><table><tr><th>Head</th></tr><tr><td>a${'\u00a0'.repeat(300_000)}b</td></tr></table></body>`;
    const markdown = await markdownOf(page);
    expect(lines(markdown)).toEqual(expect.arrayContaining(['| Head |', '| --- |']));
    expect(markdown).toMatch(/\| a\u00a0+b \|/);
  });
});
