import { readdirSync, readFileSync } from 'node:fs';
import { logger } from '../logger';

/**
 * The most memory (resident, MiB) one of Chromium's renderer processes may hold. A page's heap is capped per V8
 * isolate (chromiumLaunch.ts), and every Web Worker is an isolate of its own that lives in its page's renderer
 * process, so six workers held 3 GB (red team): past this, the renderer process is stopped, and its page's capture
 * fails as the page's (chromiumRenderer.ts: "The page crashed the renderer"), well before the 3,008 MB renderer
 * function itself would be killed with everything in it. Real pages, even long full-page captures, stay far below.
 */
export const RENDERER_MEMORY_LIMIT_MB = 2048;

/** How often the renderer processes are measured: a page allocating at full speed gains a few hundred MB meanwhile. */
const CHECK_EVERY_MS = 250;

const RENDERER_SWITCH = /(?:^|[\s\0])--type=renderer(?:[\s\0]|$)/;
const ZYGOTE_SWITCH = /(?:^|[\s\0])--type=zygote(?:[\s\0]|$)/;

export interface MemoryWatchdog {
  /** A capture begins: measured from now until the returned function is called (idle, nothing is read). */
  capturing(): () => void;
  stop(): void;
}

/**
 * Measures the renderer processes below `browserPid` (through the zygote, when Chromium's sandbox has one) every
 * CHECK_EVERY_MS while a capture runs, and kills any above `limitMb`. Linux only (/proc): elsewhere it finds none and
 * does nothing. A check reads a few dozen small /proc files synchronously: about 0.2 ms of CPU (the same reads through
 * promises cost 5 ms).
 */
export function watchRendererMemory(browserPid: number, limitMb = RENDERER_MEMORY_LIMIT_MB): MemoryWatchdog {
  let captures = 0;
  let timer: NodeJS.Timeout | undefined;

  function check(): void {
    for (const pid of descendants(browserPid)) {
      // Chromium rewrites its command line (one string of spaces, not NUL-separated arguments).
      if (!RENDERER_SWITCH.test(read(`/proc/${pid}/cmdline`))) continue;
      const kb = /^VmRSS:\s+(\d+) kB$/m.exec(read(`/proc/${pid}/status`))?.[1];
      const rssMb = Number(kb ?? 0) / 1024;
      if (rssMb <= limitMb) continue;
      logger.warn('Renderer process over its memory limit stopped', { rssMb, limitMb });
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
  }

  const stop = () => {
    clearInterval(timer);
    timer = undefined;
  };
  return {
    capturing() {
      if (captures++ === 0) {
        timer = setInterval(check, CHECK_EVERY_MS);
        timer.unref();
      }
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        if (--captures === 0) stop();
      };
    },
    stop,
  };
}

/**
 * The browser's child processes, and the zygote's (renderers are its children when Chromium's sandbox is on), from
 * the children lists of their threads: Chromium starts processes from a launcher thread of its own.
 */
function descendants(browserPid: number): number[] {
  const children = childrenOf(browserPid);
  const zygotes = children.filter((pid) => ZYGOTE_SWITCH.test(read(`/proc/${pid}/cmdline`)));
  return [...children, ...zygotes.flatMap(childrenOf)];
}

function childrenOf(pid: number): number[] {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return threads.flatMap((thread) =>
    read(`/proc/${pid}/task/${thread}/children`).split(/\s+/).filter(Boolean).map(Number),
  );
}

/** A /proc file's text; empty once its process is gone (or where there is no /proc). */
function read(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
