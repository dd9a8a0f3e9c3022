import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumRenderer } from '../../shared/capture/chromiumRenderer';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 24): a capture with a selector field (`selector`, `hideSelectors`, `click`, `waitForSelector`) right
 * after one with another device or `scale`, any account's, failed `500` "The browser stopped during the capture",
 * counted as ours, in 8 of 10 rounds. The selectors were parsed in the spare page while its emulation changed, and
 * a change of mobile or touch emulation reloads that page (puppeteer's setViewport): the parse's world went away.
 */

let server: PageServer;
let renderer: ChromiumRenderer;

beforeAll(async () => {
  server = await startPageServer({ '/page': solidPage('#0f0', '', '<p class="ad">ad</p><main>text</main>') });
  renderer = new ChromiumRenderer();
  await renderer.warmUp();
}, 120_000);

afterAll(async () => {
  await renderer?.close();
  await server?.close();
});

const capture = (body: Record<string, unknown>) =>
  renderer.capture(captureSpecOf(screenshotRequest.parse({ url: `${server.origin}/page`, ...body })), {
    deadline: Date.now() + 30_000,
  });

describe('a capture with selectors after a capture in another emulation', () => {
  it('is taken, whichever device, scale and selector field came before', async () => {
    const rounds: Record<string, unknown>[][] = [
      [{ device: 'mobile' }, { width: 800, height: 600, hideSelectors: ['.ad'] }],
      [
        { device: 'tablet', scale: 2 },
        { width: 800, height: 600, selector: 'main' },
      ],
      [
        { width: 800, height: 600 },
        { device: 'tablet', selector: 'main' },
      ],
      [{ device: 'mobile' }, { width: 800, height: 600, waitForSelector: 'main', click: 'main' }],
    ];
    for (const round of [...rounds, ...rounds]) {
      for (const body of round) {
        const result = await capture(body);
        expect(result.image.length, JSON.stringify(body)).toBeGreaterThan(0);
      }
    }
  });
});
