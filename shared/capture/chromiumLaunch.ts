import { tmpdir } from 'node:os';
import chromium from '@sparticuz/chromium';
import puppeteer, { type Browser } from 'puppeteer-core';
import { type ChromiumTempDir, createChromiumTempDir } from './chromiumTempDir';
import { blockServiceWorkers } from './serviceWorkerBlock';

/**
 * Flags from @sparticuz/chromium's defaults that we must not run with:
 * - `--single-process`: a second browser context kills the browser, and we need a fresh context per capture;
 * - `--disable-web-security`, `--allow-running-insecure-content`: a captured page's scripts could read other
 *   origins' responses (docs/api.md, "Capture").
 */
const REFUSED_FLAGS = new Set([
  '--single-process',
  '--disable-web-security',
  '--allow-running-insecure-content',
]);

/**
 * A page's JavaScript heap limit. V8's default (about 4 GB) is more than the screenshot function's memory, so a page
 * that allocates without end would get the whole function killed (no answer, no refund); capped, only its renderer
 * dies and the capture fails cleanly with a 500.
 */
const PAGE_HEAP_LIMIT_MB = 512;

/**
 * Flags we add: a bounded page heap, no scrollbars in the image, no audio, and software compositing. (Chrome's
 * switches for background networking, sync, extensions and first-run do not exist in the headless shell, so they
 * are not passed.)
 *
 * `--disable-gpu-compositing`: Lambda has no GPU, so the "GPU" of the defaults is SwiftShader, a CPU emulating one,
 * and rasterising and compositing through it costs more CPU than Chrome's own software path, the one Chrome takes on
 * any machine without a GPU. The screenshot step is about 25 % faster, a whole capture through the handler about
 * 14 % (docs/performance.md). The
 * image differs only in antialiasing: on the bench page 99.7 % of the channel values that differ are off by 1 or 2.
 * WebGL still renders (through SwiftShader, read back).
 */
const EXTRA_FLAGS = [
  `--js-flags=--max-old-space-size=${PAGE_HEAP_LIMIT_MB}`,
  '--hide-scrollbars',
  '--mute-audio',
  '--disable-gpu-compositing',
];

export function chromiumArgs(extra: string[] = []): string[] {
  return [...chromium.args.filter((flag) => !REFUSED_FLAGS.has(flag)), ...EXTRA_FLAGS, ...extra];
}

/** CHROMIUM_PATH points at another binary (e.g. for debugging); by default the @sparticuz/chromium build. */
export async function chromiumExecutable(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return env.CHROMIUM_PATH || (await chromium.executablePath());
}

/**
 * Variables Chromium may see. Everything else (AWS credentials above all) stays in our process only. TMPDIR is not
 * passed on: launchChromium() gives Chromium a temp folder of its own.
 */
const BROWSER_ENV_NAMES = [
  'PATH',
  'HOME',
  'TZ',
  'LANG',
  'LC_ALL',
  'LD_LIBRARY_PATH',
  'FONTCONFIG_PATH',
  'FONTCONFIG_FILE',
];

function browserEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    BROWSER_ENV_NAMES.flatMap((name) => (env[name] !== undefined ? [[name, env[name] as string]] : [])),
  );
}

export interface LaunchedChromium {
  browser: Browser;
  /** Removed once the browser disconnects (closed or crashed); the renderer also sweeps it between captures. */
  tempDir: ChromiumTempDir;
}

/**
 * Chromium as we run it: our flags plus `extraArgs` (the egress proxy's), a short environment, a temp folder of its
 * own under the caller's TMPDIR, so that what Chromium leaves there goes with the browser, and no service workers.
 */
export async function launchChromium(
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = process.env,
): Promise<LaunchedChromium> {
  const tempDir = await createChromiumTempDir(env.TMPDIR ?? tmpdir());
  try {
    const browser = await puppeteer.launch({
      executablePath: await chromiumExecutable(env),
      args: chromiumArgs(extraArgs),
      headless: 'shell',
      env: { ...browserEnvironment(env), TMPDIR: tempDir.path },
      acceptInsecureCerts: false,
      // Puppeteer turns Chromium's flood protection off; kept on, a page that calls history.pushState in a loop is
      // throttled by Chromium instead of swamping the browser and the DevTools connection.
      ignoreDefaultArgs: ['--disable-ipc-flooding-protection'],
      protocolTimeout: 120_000,
      // The process decides how it stops (the local server closes the service on SIGINT and SIGTERM): puppeteer's
      // own handlers would kill Chromium and exit at once, leaving its temp folder behind.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
    browser.once('disconnected', () => void tempDir.remove());
    await blockServiceWorkers(browser).catch(async (error) => {
      await browser.close();
      throw error;
    });
    return { browser, tempDir };
  } catch (error) {
    await tempDir.remove();
    throw error;
  }
}
