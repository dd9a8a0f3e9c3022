import { tmpdir } from 'node:os';
import chromium from '@sparticuz/chromium';
import puppeteer, { type Browser } from 'puppeteer-core';
import { allowedVariables } from '../allowedVariables';
import { logger } from '../logger';
import { type BrowserBundle, browserBundle } from './browserBundle';
import { NO_SANDBOX_FLAGS, sandboxChoice } from './chromiumSandbox';
import { type ChromiumTempDir, createChromiumTempDir } from './chromiumTempDir';
import { capDevToolsMessages } from './devtoolsMessageCap';
import { PAGE_HEAP_LIMIT_MB } from './memoryLimits';
import { chromiumExecutable } from './packedChromium';
import { blockServiceWorkers } from './serviceWorkerBlock';

/**
 * Flags from @sparticuz/chromium's defaults that we must not run with:
 * - `--single-process`: a second browser context kills the browser, and we need a fresh context per capture;
 * - `--disable-web-security`, `--allow-running-insecure-content`: a captured page's scripts could read other
 *   origins' responses (docs/api.md, "Capture");
 * - `--enable-features=SharedArrayBuffer` (its only feature): shared memory on pages that are not cross-origin
 *   isolated, which Chrome never gives them: with site isolation off, a third-party frame would have a precise timer
 *   to read the customer's page memory with (red team). Isolated pages (COOP and COEP) still have it.
 */
const REFUSED_FLAGS = new Set([
  '--single-process',
  '--disable-web-security',
  '--allow-running-insecure-content',
  '--enable-features=SharedArrayBuffer',
]);

/**
 * Flags we add: a bounded page heap, no scrollbars in the image, no audio, software compositing with tile memory for
 * the largest image, no pop-ups, and no
 * `navigator.webdriver`: pages see a regular browser (browserIdentity.ts), and some hide what they show people
 * (consent banners, for one) from automated ones. (Chrome's
 * switches for background networking, sync, extensions and first-run do not exist in the headless shell, so they
 * are not passed.)
 *
 * `--disable-gpu-compositing`: Lambda has no GPU, so the "GPU" of the defaults is SwiftShader, a CPU emulating one,
 * and rasterising and compositing through it costs more CPU than Chrome's own software path, the one Chrome takes on
 * any machine without a GPU. The screenshot step is about 25 % faster, a whole capture through the handler about
 * 14 % (docs/performance.md). The
 * image differs only in antialiasing: on the bench page 99.7 % of the channel values that differ are off by 1 or 2.
 * WebGL still renders (through SwiftShader, read back).
 *
 * `--force-gpu-mem-available-mb=1024`: the compositor's tile memory, 512 MB by default (Chrome gives 1,024 to a 4K
 * screen, which headless has not). The largest image the spec allows (11,520 x 16,384 px) needs 755 MB of tiles: past
 * 512, Chromium drew nothing and left the page's background, and such an image from about 130 million pixels on was
 * answered 200, charged, with its last third blank (red team, round 22).
 *
 * `--block-new-web-contents` (the headless shell's): `window.open` answers null and opens nothing. A capture is one
 * page; every pop-up was a renderer process of its own, with a heap cap of its own and none of the capture's
 * controls (red team: 400 `noopener` pop-ups took gigabytes and slowed another account's captures tenfold). Our own
 * tabs are opened over DevTools, which the flag leaves alone.
 *
 * `SharedWorker` among the Blink features turned off: a shared worker is a target of its own, outside the page's
 * session, so it ran with headless Chromium's own user agent (`HeadlessChrome`) and its requests passed `blockAds`
 * and `blockChats` (red team, round 31). Without the feature the interface is gone from every realm of the page, its
 * blank frames included, as in the browsers that never had it (Chrome on Android until 2025); pages fall back.
 *
 * `--screen-info={3840x2160}`: the screen a desktop page sees (`screen.width`, `device-width` media queries), a 4K
 * one, as wide as the widest viewport the spec allows. The headless default is 800 x 600: a 1920-wide capture matched
 * `max-device-width: 1024px` and ran the scripts that send small screens to a phone site (red team, round 31). The
 * mobile and tablet presets emulate their own screen.
 */
const EXTRA_FLAGS = [
  `--js-flags=--max-old-space-size=${PAGE_HEAP_LIMIT_MB}`,
  '--hide-scrollbars',
  '--mute-audio',
  '--disable-gpu-compositing',
  '--force-gpu-mem-available-mb=1024',
  '--disable-blink-features=AutomationControlled,SharedWorker',
  '--block-new-web-contents',
  '--screen-info={3840x2160}',
];

/** Our flags, plus `extra`; with `sandboxed`, without the flags that turn Chromium's sandbox off (chromiumSandbox.ts). */
export function chromiumArgs(extra: string[] = [], sandboxed = false): string[] {
  const refused = sandboxed ? new Set([...REFUSED_FLAGS, ...NO_SANDBOX_FLAGS]) : REFUSED_FLAGS;
  return [...chromium.args.filter((flag) => !refused.has(flag)), ...EXTRA_FLAGS, ...extra];
}

/**
 * Variables Chromium may see from ours. Everything else (AWS credentials above all) stays in our process only.
 * TMPDIR, the time zone, the locale and the font and library settings are not passed on: chromiumEnvironment() sets
 * them.
 */
const BROWSER_ENV_NAMES = ['PATH', 'HOME'];

/**
 * Lambda's locale. Fontconfig ranks fonts by the locale's language when it picks a fallback (Han characters are
 * drawn per region), so a host's own locale (LC_ALL included) would make a local capture differ from a deployed one.
 */
const BROWSER_LOCALE = 'en_US.UTF-8';

/**
 * The environment Chromium runs in: a short list of ours, the bundle's fonts (fonts/fonts.conf, which names no
 * folder of the host) with their cache in `tempDir`, and the bundle's libraries.
 */
export function chromiumEnvironment(
  env: NodeJS.ProcessEnv,
  tempDir: string,
  bundle: BrowserBundle = browserBundle(env),
): Record<string, string> {
  return {
    ...allowedVariables(env, BROWSER_ENV_NAMES),
    LANG: BROWSER_LOCALE,
    // A capture without `timezone` runs in UTC, the contract's default and Lambda's zone: a host's own zone would
    // change local captures and tell every page where the operator is (red team, round 27).
    TZ: 'UTC',
    FONTCONFIG_FILE: bundle.fontConfigFile,
    // fonts.conf keeps fontconfig's cache under $XDG_CACHE_HOME: the browser's temp folder, which goes with it.
    XDG_CACHE_HOME: tempDir,
    LD_LIBRARY_PATH: [bundle.libraryDir, env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
    TMPDIR: tempDir,
  };
}

export interface LaunchedChromium {
  browser: Browser;
  /** Removed once the browser disconnects (closed or crashed); the renderer also sweeps it between captures. */
  tempDir: ChromiumTempDir;
  /** Whether it runs with its own sandbox (chromiumSandbox.ts). */
  sandboxed: boolean;
}

/**
 * Chromium builds that could not start with their sandbox here (CHROMIUM_PATH, or '' for the bundle's): this process
 * does not ask them again.
 */
const sandboxRefused = new Set<string>();

/**
 * Chromium as we run it: our flags plus `extraArgs` (the egress proxy's), its own sandbox where it can have one
 * (`uid` is the user it runs as), a short environment with our fonts, a temp folder of its own under the caller's
 * TMPDIR, so that what Chromium leaves there goes with the browser, and no service workers.
 */
export async function launchChromium(
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = process.env,
  uid: number | undefined = process.getuid?.(),
): Promise<LaunchedChromium> {
  const choice = sandboxChoice(env, uid);
  const build = env.CHROMIUM_PATH ?? '';
  const sandboxed = choice === 'on' || (choice === 'auto' && !sandboxRefused.has(build));
  try {
    return await launchOnce(extraArgs, env, sandboxed);
  } catch (error) {
    // Now and then, on a loaded machine, Chromium dies while it starts ("Target closed" before its first command):
    // it is started once more, from a new temp folder, before the capture fails for it.
    logger.warn('Chromium did not start; starting it once more', { error: error as Error });
    try {
      return await launchOnce(extraArgs, env, sandboxed);
    } catch (again) {
      if (!sandboxed || choice !== 'auto') throw again;
      // Twice: the machine does not let Chromium set its sandbox up (unprivileged user namespaces off, by a kernel
      // setting or AppArmor; Chromium says why on its stderr, which DevTools over a pipe does not show).
      sandboxRefused.add(build);
      logger.warn(
        'Chromium did not start with its sandbox; this process runs it without one (CHROMIUM_SANDBOX=off skips the attempt, =on insists)',
        { error: again as Error },
      );
      return launchOnce(extraArgs, env, false);
    }
  }
}

async function launchOnce(
  extraArgs: string[],
  env: NodeJS.ProcessEnv,
  sandboxed: boolean,
): Promise<LaunchedChromium> {
  const tempDir = await createChromiumTempDir(env.TMPDIR ?? tmpdir());
  try {
    const browser = await puppeteer.launch({
      executablePath: await chromiumExecutable(env),
      args: chromiumArgs(extraArgs, sandboxed),
      headless: 'shell',
      env: chromiumEnvironment(env, tempDir.path),
      acceptInsecureCerts: false,
      // Puppeteer turns Chromium's flood protection off; kept on, a page that calls history.pushState in a loop is
      // throttled by Chromium instead of swamping the browser and the DevTools connection.
      ignoreDefaultArgs: ['--disable-ipc-flooding-protection'],
      protocolTimeout: 120_000,
      // DevTools over a pipe, not a port: Chromium exits as soon as the pipe closes, so a renderer process that is
      // killed (the OOM killer, a crash) takes its browser with it instead of leaving it running; and there is no
      // DevTools port at all for a page to reach.
      pipe: true,
      // The process decides how it stops (the local server closes the service on SIGINT and SIGTERM): puppeteer's
      // own handlers would kill Chromium and exit at once, leaving its temp folder behind.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
    // Nobody awaits this removal, so its failure is logged here: unhandled, it would end the process.
    browser.once('disconnected', () => {
      tempDir.remove().catch((error: unknown) => {
        logger.warn("Chromium's temp folder was not removed", { error: error as Error });
      });
    });
    try {
      capDevToolsMessages(browser);
    } catch (error) {
      await browser.close();
      throw error;
    }
    await blockServiceWorkers(browser).catch(async (error) => {
      await browser.close();
      throw error;
    });
    return { browser, tempDir, sandboxed };
  } catch (error) {
    await tempDir.remove();
    throw error;
  }
}
