import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import {
  decodeImage,
  GREEN,
  near,
  type ScreenshotHarness,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

/**
 * Pages that make the browser send the renderer one DevTools message longer than a V8 string may be, through the
 * real handler, the renderer's own process and real Chromium. 100 million control characters are 100 MB in the
 * page; Chromium escapes each as six characters of JSON, a 600 MB message that puppeteer's pipe reader turned into
 * one string: it threw where nothing could catch it, and the renderer process died with every capture it ran.
 * (An answer to one of our commands that passes its cap, a screenshot, is in oversizedImages.test.ts; a page cannot
 * make its HTML that large within its budget: 50 million such characters already take 30 s.)
 */

const CONTROL_CHARACTERS = "'\\x01'.repeat(1e8)";

let pages: PageServer;
let harness: ScreenshotHarness;

beforeAll(async () => {
  pages = await startPageServer({
    // One line of script: an event (Runtime.consoleAPICalled) of 600 MB.
    '/logs': solidPage('#00ff00', `<script>console.log(${CONTROL_CHARACTERS});</script>`),
    '/plain': solidPage('#00ff00'),
  });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
});

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

describe('a DevTools message longer than a string may be', () => {
  it('as an event the page sends, is dropped: the page is captured, and the renderer process and a capture beside it go on', async () => {
    const attacker = await harness.newAccount();
    const neighbour = await harness.newAccount();
    const { pid } = await harness.renderer.processInfo();

    const [logs, beside] = await Promise.all([
      harness.shoot(attacker.apiKey, { url: `${pages.origin}/logs`, width: 640, height: 480 }),
      harness.shoot(neighbour.apiKey, { url: `${pages.origin}/plain`, width: 640, height: 480 }),
    ]);

    expect(logs.status).toBe(200);
    expect(near((await decodeImage(logs.body)).pixel(10, 10), GREEN)).toBe(true);
    expect(beside.status).toBe(200);
    expect((await harness.renderer.processInfo()).pid).toBe(pid);
  }, 120_000);
});
