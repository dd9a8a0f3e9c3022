import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import {
  BLUE,
  decodeImage,
  GREEN,
  near,
  RED,
  type Rgb,
  type ScreenshotHarness,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

/**
 * Red team (round 23): full pages and elements of some layouts were answered 200 with the wrong part of the page.
 * DevTools places a clip from the far top left of what the page can scroll to, which is not the page's origin on a
 * right-to-left page that overflows sideways; an element above or left of the page was clipped from there; a mobile
 * device's full page of a page laid out 980 px wide showed its left 390 px; and a page whose `resize` handler is
 * debounced kept the layout of the tall viewport the full page sets for lazy loaders.
 */

const YELLOW: Rgb = [255, 255, 0];
const WHITE: Rgb = [255, 255, 255];

/** A right-to-left page 3,000 px wide: its start (right) end green, then blue, its far end red. */
const RTL_BANDS = `<div style="width:3000px;height:2000px;background:linear-gradient(to left,
  #0f0 0 800px, #00f 800px 2200px, #f00 2200px)"></div>`;

let site: PageServer;
let harness: ScreenshotHarness;
let apiKey: string;

beforeAll(async () => {
  site = await startPageServer({
    '/rtl': `<!doctype html><html dir=rtl><body style="margin:0">${RTL_BANDS}
      <div id=mark style="width:200px;height:100px;background:#ff0"></div></body></html>`,
    // The body's direction is the view's too.
    '/rtl-body': `<!doctype html><html><body dir=rtl style="margin:0">${RTL_BANDS}</body></html>`,
    // Shorter than the view (red team, round 24: a clip beyond the viewport of the view's size fell off to the side).
    '/rtl-short': `<!doctype html><html dir=rtl><body style="margin:0">
      <div style="width:500px;height:500px;background:#0f0"></div></body></html>`,
    // Vertical Japanese: its lines run from the right, and it overflows leftwards.
    '/vertical': `<!doctype html><html style="writing-mode:vertical-rl"><body style="margin:0">
      <div style="width:3000px;height:500px;background:linear-gradient(to left,
        #0f0 0 800px, #00f 800px 2200px, #f00 2200px)"></div></body></html>`,
    // Its inline direction runs upwards: the view starts at the bottom of what the page scrolls to.
    '/upwards': `<!doctype html><html style="writing-mode:vertical-rl;direction:rtl"><body style="margin:0">
      <div style="width:300px;height:3000px;background:linear-gradient(to top,
        #0f0 0 600px, #00f 600px 2200px, #f00 2200px)"></div></body></html>`,
    // A header that shrinks once the page is scrolled: the element moves up at the next frame.
    '/shrinking-header': `<!doctype html><body style="margin:0">
      <div id=header style="height:300px;background:#0f0"></div><div style="height:1500px;background:#00f"></div>
      <div id=mark style="height:100px;width:200px;background:#ff0"></div><div style="height:3000px;background:#00f"></div>
      <script>addEventListener('scroll', () => { header.style.height = scrollY > 0 ? '60px' : '300px'; });</script>
      </body>`,
    '/above': `<!doctype html><body style="margin:0;background:#fff">
      <div id=mark style="position:absolute;left:-50px;top:-30px;width:200px;height:100px;background:#f00"></div>
      <div style="height:3000px"></div></body>`,
    // No `width=device-width`: a phone lays it out 980 px wide and shows it zoomed out.
    '/wide': `<!doctype html><body style="margin:0"><div style="width:980px;height:3000px;background:linear-gradient(
      to right, #0f0 0 400px, #00f 400px 800px, #f00 800px)"></div></body>`,
    // Hostile: laid out 10,000 px wide and 80,000 tall, for a phone to zoom out on as far as it goes.
    '/zoomed-out-giant': `<!doctype html><meta name=viewport content="width=10000, initial-scale=0.01">
      <body style="margin:0"><div style="width:10000px;height:80000px;background:#0f0"></div></body>`,
    '/debounced': `<!doctype html><style>body{margin:0} #hero{background:#0f0} #rest{height:3000px;background:#00f}</style>
      <body><div id=hero></div><div id=rest></div><script>
        const size = () => { document.getElementById('hero').style.height = innerHeight + 'px'; };
        size();
        let timer;
        addEventListener('resize', () => { clearTimeout(timer); timer = setTimeout(size, 100); });
      </script></body>`,
  });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: site.hostPort });
  ({ apiKey } = await harness.newAccount());
}, 120_000);

afterAll(async () => {
  await harness?.close();
  await site?.close();
});

async function capture(path: string, options: Record<string, unknown>) {
  const answer = await harness.shoot(apiKey, { url: `${site.origin}${path}`, ...options });
  expect(answer.status, answer.body.toString('utf8')).toBe(200);
  return decodeImage(answer.body);
}

/** Colours across the image's width at row `y`: its left, quarter, middle, three quarters and right. */
function across(image: Awaited<ReturnType<typeof decodeImage>>, y: number): Rgb[] {
  const width = image.width ?? 0;
  return [0, 0.25, 0.5, 0.75, 1].map((at) => image.pixel(Math.min(width - 1, Math.floor(width * at)), y));
}

describe('a right-to-left page wider than the viewport', () => {
  it.each(['/rtl', '/rtl-body'])('%s: a full page shows its start, as the viewport does', async (path) => {
    const image = await capture(path, { width: 800, height: 600, fullPage: true });
    expect(image.width).toBe(800);
    for (const colour of across(image, 1_000)) expect(near(colour, GREEN), String(colour)).toBe(true);
  });

  it('an element is captured where it is', async () => {
    const image = await capture('/rtl', { width: 800, height: 600, selector: '#mark' });
    expect([image.width, image.height]).toEqual([200, 100]);
    for (const colour of across(image, 50)) expect(near(colour, YELLOW), String(colour)).toBe(true);
  });
});

describe('a right-to-left or vertical page the view shows whole, or that scrolls upwards', () => {
  it('a right-to-left page shorter than the view is captured as the view shows it', async () => {
    const image = await capture('/rtl-short', { width: 800, height: 600, fullPage: true });
    expect([image.width, image.height]).toEqual([800, 600]);
    expect(near(image.pixel(299, 100), WHITE)).toBe(true);
    expect(near(image.pixel(300, 100), GREEN)).toBe(true);
    expect(near(image.pixel(799, 100), GREEN)).toBe(true);
  });

  it('a vertical page that overflows leftwards shows its start', async () => {
    const image = await capture('/vertical', { width: 800, height: 600, fullPage: true });
    for (const colour of across(image, 100)) expect(near(colour, GREEN), String(colour)).toBe(true);
  });

  it('a page whose block runs upwards is captured from its top, the whole of it', async () => {
    const image = await capture('/upwards', { width: 800, height: 600, fullPage: true });
    expect([image.width, image.height]).toEqual([800, 3_000]);
    const column = [0, 799, 800, 2_399, 2_400, 2_999].map((y) => image.pixel(650, y));
    expect(column.map((colour) => [RED, BLUE, GREEN].findIndex((want) => near(colour, want)))).toEqual([
      0, 0, 1, 1, 2, 2,
    ]);
  });
});

describe('an element that the page moves when it is scrolled to', () => {
  it('is measured once it holds still', async () => {
    const image = await capture('/shrinking-header', { width: 800, height: 600, selector: '#mark' });
    expect([image.width, image.height]).toEqual([200, 100]);
    for (const y of [0, 99]) for (const colour of across(image, y)) expect(near(colour, YELLOW)).toBe(true);
  });
});

describe('an element partly above and left of the page', () => {
  it('is captured from where the page starts: its visible part, nothing beside it', async () => {
    const image = await capture('/above', { width: 800, height: 600, selector: '#mark' });
    expect([image.width, image.height]).toEqual([150, 70]);
    for (const y of [0, 69]) for (const colour of across(image, y)) expect(near(colour, RED)).toBe(true);
  });
});

describe('a mobile full page of a page laid out wider than the device', () => {
  it.each([1, 2])('shows the whole width, zoomed out as the phone shows it (scale %i)', async (scale) => {
    const image = await capture('/wide', { device: 'mobile', fullPage: true, scale });
    expect(image.width).toBe(390 * scale);
    // 3,000 CSS px at the zoom that fits 980 into 390.
    expect(Math.abs((image.height ?? 0) - Math.round((3_000 * 390 * scale) / 980))).toBeLessThanOrEqual(
      scale,
    );
    const [left, , middle, , right] = across(image, Math.floor((image.height ?? 0) / 2));
    expect([near(left as Rgb, GREEN), near(middle as Rgb, BLUE), near(right as Rgb, RED)]).toEqual([
      true,
      true,
      true,
    ]);
  });
});

describe('a mobile full page of a page that asks to be zoomed out as far as it goes', () => {
  it('stays the device wide and is cut at the cap in image pixels, not CSS pixels', async () => {
    const answer = await harness.shoot(apiKey, {
      url: `${site.origin}/zoomed-out-giant`,
      device: 'mobile',
      fullPage: true,
    });
    expect(answer.status, answer.body.toString('utf8')).toBe(200);
    expect(answer.headers['X-Screenshot-Truncated']).toBe('true');
    const image = await decodeImage(answer.body);
    expect([image.width, image.height]).toEqual([390, 16_384]);
    expect(near(image.pixel(200, 16_000), GREEN)).toBe(true);
  });
});

describe('a full page whose resize handler is debounced', () => {
  it('is captured in the layout of its own viewport, once its height settles', async () => {
    const image = await capture('/debounced', { width: 800, height: 600, fullPage: true });
    expect(image.height).toBe(3_600);
    expect(near(image.pixel(400, 599), GREEN)).toBe(true);
    expect(near(image.pixel(400, 601), BLUE)).toBe(true);
    expect(near(image.pixel(400, 3_599), WHITE)).toBe(false);
  });
});
