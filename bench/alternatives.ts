import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import chromium from '@sparticuz/chromium';
import captureWebsite from 'capture-website';
import puppeteer, { type Browser, type LaunchOptions, type Page } from 'puppeteer-core';
import { chromiumArgs, chromiumEnvironment } from '../shared/capture/chromiumLaunch';

/**
 * What a user would run instead of our service, on the same Chromium binary. The floor runs with our renderer's
 * launch flags (minus the egress proxy), so that ours against the floor is our code path alone. The alternatives
 * run as their users would launch them: @sparticuz/chromium's documented setup (its `args`, headless shell), since
 * our flags are our own work (docs/performance.md) and nobody running capture-website or naive Lambda code has them.
 */
export interface Capturer {
  shoot(url: string): Promise<Buffer>;
  close(): Promise<void>;
}

const VIEWPORT = { width: 1920, height: 1080, deviceScaleFactor: 1 };

/**
 * Every browser of the bench gets our font set (fonts/fonts.conf), as ours does: the rows then draw the same page
 * with the same fonts, so the floor's image can be compared with ours pixel for pixel, and no row pays for more or
 * fewer fonts than another. Their font cache and temp files go to a folder of this run's own (made by mkdtemp, its
 * user's alone: a fixed name in the shared temp folder could be made first by another user, red team).
 */
function fontEnvironment(): Record<string, string> {
  browsersDir ??= mkdtempSync(join(tmpdir(), 'screenshot-bench-browsers-'));
  return chromiumEnvironment(process.env, browsersDir);
}

let browsersDir: string | undefined;

/** Our renderer's flags, plus `extraArgs`. */
export function ourLaunch(executablePath: string, extraArgs: string[] = []): LaunchOptions {
  return { executablePath, args: chromiumArgs(extraArgs), headless: 'shell', env: fontEnvironment() };
}

/** How @sparticuz/chromium's README launches it, as Lambda code built on it does (with our fonts, as above). */
export function usualLaunch(executablePath: string): LaunchOptions {
  return { executablePath, args: chromium.args, headless: 'shell', env: fontEnvironment() };
}

/**
 * The floor: raw puppeteer-core, browser launched and page opened once; each sample is navigate + capture only.
 * `extraArgs` lets the diagnostic row route it through the egress proxy.
 */
export async function startFloor(
  executablePath: string,
  extraArgs: string[] = [],
): Promise<Capturer & { version: string }> {
  const browser: Browser = await puppeteer.launch(ourLaunch(executablePath, extraArgs));
  const page: Page = await browser.newPage();
  await page.setViewport(VIEWPORT);
  return {
    async shoot(url) {
      await page.goto(url, { waitUntil: 'load' });
      return Buffer.from(await page.screenshot({ type: 'png' }));
    },
    close: () => browser.close(),
    version: await browser.version(),
  };
}

/** Naive Lambda code: launch, capture and close the browser for every request. */
export function launchPerRequest(launch: LaunchOptions): Capturer {
  return {
    async shoot(url) {
      const browser = await puppeteer.launch(launch);
      try {
        const page = await browser.newPage();
        await page.setViewport(VIEWPORT);
        await page.goto(url, { waitUntil: 'load' });
        return Buffer.from(await page.screenshot({ type: 'png' }));
      } finally {
        await browser.close();
      }
    },
    close: async () => undefined,
  };
}

/**
 * capture-website with its defaults (it launches a browser per call and waits for network idle), except the output
 * (1920x1080 at scale 1, PNG, as the other rows) and its ad blocker: that fetches filter lists from the internet,
 * which this machine does not have, and a failing fetch would time the network rather than the library.
 */
/** capture-website drives its own copy of puppeteer, so its launch options are that copy's type. */
type CaptureWebsiteLaunch = NonNullable<
  NonNullable<Parameters<typeof captureWebsite.buffer>[1]>['launchOptions']
>;

export function captureWebsiteCapturer(launch: LaunchOptions): Capturer {
  return {
    async shoot(url) {
      const image = await captureWebsite.buffer(url, {
        width: VIEWPORT.width,
        height: VIEWPORT.height,
        scaleFactor: 1,
        type: 'png',
        blockAds: false,
        launchOptions: launch as CaptureWebsiteLaunch,
      });
      return Buffer.from(image);
    },
    close: async () => undefined,
  };
}
