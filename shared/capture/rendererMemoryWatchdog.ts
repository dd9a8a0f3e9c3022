import { readdir, readFile } from 'node:fs/promises';
import { logger } from '../logger';

/**
 * The most memory (resident, MiB) one of Chromium's renderer processes may hold. A page's heap is capped per V8
 * isolate (chromiumLaunch.ts), and every Web Worker is an isolate of its own that lives in its page's renderer
 * process, so six workers held 3 GB (red team): past this, the renderer process is stopped, and its page's capture
 * fails as the page's (chromiumRenderer.ts: "The page crashed the renderer"), well before the 3,008 MB renderer
 * function itself would be killed with everything in it. Real pages, even long full-page captures, stay far below.
 */
export const RENDERER_MEMORY_LIMIT_MB = 2048;

const RENDERER_SWITCH = /(?:^|[\s\0])--type=renderer(?:[\s\0]|$)/;
const ZYGOTE_SWITCH = /(?:^|[\s\0])--type=zygote(?:[\s\0]|$)/;

/** How often the renderer processes are measured: a page allocating at full speed gains a few hundred MB meanwhile. */
const CHECK_EVERY_MS = 250;

export interface MemoryWatchdog {
  stop(): void;
}

/**
 * Measures the renderer processes below `browserPid` (through the zygote, when Chromium's sandbox has one) every
 * CHECK_EVERY_MS, and kills any above `limitMb`. Linux only (/proc): elsewhere it finds none and does nothing.
 */
export function watchRendererMemory(browserPid: number, limitMb = RENDERER_MEMORY_LIMIT_MB): MemoryWatchdog {
  /** Processes known to be renderers. Others are read again: a child read between its fork and its exec still shows
   * the browser's command line. */
  const renderers = new Set<number>();
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    check()
      .catch(() => undefined)
      .finally(() => {
        checking = false;
      });
  }, CHECK_EVERY_MS);
  timer.unref();

  async function check(): Promise<void> {
    const running = await descendants(browserPid);
    for (const pid of renderers) if (!running.includes(pid)) renderers.delete(pid);
    for (const pid of running) {
      if (!(await isRenderer(pid))) continue;
      const rssMb = await residentMb(pid);
      if (rssMb === undefined || rssMb <= limitMb) continue;
      logger.warn('Renderer process over its memory limit stopped', { rssMb, limitMb });
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
  }

  /** Whether `pid` is a renderer (not the GPU, network or zygote process). */
  async function isRenderer(pid: number): Promise<boolean> {
    if (renderers.has(pid)) return true;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    // Chromium rewrites its command line (one string of spaces, not NUL-separated arguments).
    if (!RENDERER_SWITCH.test(cmdline)) return false;
    renderers.add(pid);
    return true;
  }

  return {
    stop() {
      clearInterval(timer);
    },
  };
}

/**
 * The browser's child processes, and the zygote's (renderers are its children when Chromium's sandbox is on), by the
 * children lists of each thread: Chromium starts processes from a launcher thread of its own.
 */
async function descendants(pid: number): Promise<number[]> {
  const children = await childrenOf(pid);
  const zygotes = (
    await Promise.all(children.map(async (child) => ((await isZygote(child)) ? child : [])))
  ).flat();
  return [...children, ...(await Promise.all(zygotes.map(childrenOf))).flat()];
}

async function childrenOf(pid: number): Promise<number[]> {
  const threads = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const lists = await Promise.all(
    threads.map((thread) => readFile(`/proc/${pid}/task/${thread}/children`, 'utf8').catch(() => '')),
  );
  return lists.join(' ').split(/\s+/).filter(Boolean).map(Number);
}

async function isZygote(pid: number): Promise<boolean> {
  return ZYGOTE_SWITCH.test(await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''));
}

async function residentMb(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  return kb === undefined ? undefined : Number(kb) / 1024;
}
