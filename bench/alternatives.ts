import captureWebsite from 'capture-website';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { chromiumArgs } from '../shared/capture/chromiumLaunch';

/**
 * What a user would run instead of our service, on the same Chromium binary with the same launch flags as our
 * renderer (minus the egress proxy): so every difference in the table is the code path, not the browser.
 */
export interface Capturer {
  shoot(url: string): Promise<Buffer>;
  close(): Promise<void>;
}

const VIEWPORT = { width: 1920, height: 1080, deviceScaleFactor: 1 };

function launchOptions(executablePath: string, extraArgs: string[] = []) {
  return { executablePath, args: chromiumArgs(extraArgs), headless: 'shell' as const };
}

/**
 * The floor: raw puppeteer-core, browser launched and page opened once; each sample is navigate + capture only.
 * `extraArgs` lets the diagnostic row route it through the egress proxy.
 */
export async function startFloor(
  executablePath: string,
  extraArgs: string[] = [],
): Promise<Capturer & { version: string }> {
  const browser: Browser = await puppeteer.launch(launchOptions(executablePath, extraArgs));
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
export function launchPerRequest(executablePath: string): Capturer {
  return {
    async shoot(url) {
      const browser = await puppeteer.launch(launchOptions(executablePath));
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
export function captureWebsiteCapturer(executablePath: string): Capturer {
  return {
    async shoot(url) {
      const image = await captureWebsite.buffer(url, {
        width: VIEWPORT.width,
        height: VIEWPORT.height,
        scaleFactor: 1,
        type: 'png',
        blockAds: false,
        launchOptions: launchOptions(executablePath),
      });
      return Buffer.from(image);
    },
    close: async () => undefined,
  };
}
