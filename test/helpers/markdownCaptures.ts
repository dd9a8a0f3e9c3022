import { Parser } from 'commonmark';
import { afterAll, beforeAll, expect } from 'vitest';
import { ARTICLE_PAGE } from './articlePages';
import { type ScreenshotHarness, startScreenshotHarness } from './screenshotHarness';

/**
 * A screenshot harness and an account of its own, started for the test file that calls this (beforeAll) and closed
 * after it: `shoot` sends a request body as that account.
 */
export function accountCaptures() {
  let harness: ScreenshotHarness;
  let apiKey = '';
  beforeAll(async () => {
    harness = await startScreenshotHarness();
    ({ apiKey } = await harness.newAccount());
  }, 120_000);
  afterAll(async () => {
    await harness?.close();
  });
  return { shoot: (body: Record<string, unknown>) => harness.shoot(apiKey, body) };
}

/** accountCaptures, and `markdownOf` a document's Markdown (answered 200). */
export function markdownCaptures() {
  const { shoot } = accountCaptures();
  return {
    shoot,
    async markdownOf(html: string): Promise<string> {
      const response = await shoot({ html, format: 'markdown' });
      expect(response.status).toBe(200);
      return response.body.toString('utf8');
    },
  };
}

/** What a CommonMark renderer makes clickable or passes on as HTML: link and image destinations, raw HTML. */
export function rendered(markdown: string): { destinations: string[]; rawHtml: string[] } {
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

/** A destination an agent may follow: http(s), mailto, or in the page. */
export const allowedDestination = (destination: string) => /^(?:https?:|mailto:|#)/i.test(destination);

/** `part` in a body too short for an article (the whole body is read), and inside an article Readability picks. */
export const WHOLE_BODY = (part: string) =>
  `<!doctype html><html><body><p>Shown text.</p>${part}</body></html>`;
export const IN_ARTICLE = (part: string) =>
  ARTICLE_PAGE.replace('<h2>Measured heights</h2>', `${part}<h2>Measured heights</h2>`);
