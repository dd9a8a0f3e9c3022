import { readdir, readFile } from 'node:fs/promises';

/**
 * Finds the Chromium processes this test process started, through /proc (Linux), so fault tests can kill a
 * browser or a renderer the way the kernel's OOM killer or a crash would, without a hook in the renderer.
 */
interface ProcessInfo {
  pid: number;
  ppid: number;
  /** The kernel's state letter: `Z` for a process that ended and was not reaped yet. */
  state: string;
  args: string[];
}

async function processes(): Promise<ProcessInfo[]> {
  const found: ProcessInfo[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // The command name sits in parentheses and may contain spaces; the state and the parent pid follow it.
      const [state = '', ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Chromium rewrites its children's command lines into one space-separated string, so split on both.
      const args = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split(/[\0 ]/).filter(Boolean);
      found.push({ pid: Number(entry), ppid: Number(ppid), state, args });
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

const isChromium = (info: ProcessInfo) => /chrom/i.test(info.args[0] ?? '');
const typeOf = (info: ProcessInfo) =>
  info.args.find((arg) => arg.startsWith('--type='))?.slice('--type='.length);

/**
 * Browser (main) processes below this one: children of the renderer process it started (the local boundary), or
 * its own children when a test runs the renderer in-process.
 */
export async function browserPids(): Promise<number[]> {
  const all = await processes();
  const below = subtree(process.pid, all);
  return all.filter((p) => below.has(p.pid) && isChromium(p) && !typeOf(p)).map((p) => p.pid);
}

/** Every Chromium process below the given one (a renderer process): its browser, renderers and helpers. */
export async function chromiumBelow(pid: number): Promise<number[]> {
  const all = await processes();
  const below = subtree(pid, all);
  return all.filter((p) => p.pid !== pid && below.has(p.pid) && isChromium(p)).map((p) => p.pid);
}

/** The one browser this process (or its renderer process) runs; fails when there is none or more than one. */
export async function onlyBrowserPid(): Promise<number> {
  const pids = await browserPids();
  if (pids.length !== 1) throw new Error(`expected one Chromium browser process, found ${pids.length}`);
  return pids[0] as number;
}

/** The given process and every process below it, through any depth of children. */
function subtree(rootPid: number, all: ProcessInfo[]): Set<number> {
  const below = new Set([rootPid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all) {
      if (!below.has(p.pid) && below.has(p.ppid)) {
        below.add(p.pid);
        grew = true;
      }
    }
  }
  return below;
}

/** Renderer processes below the given browser (through its zygotes). */
export async function rendererPids(browserPid: number): Promise<number[]> {
  const all = await processes();
  const below = subtree(browserPid, all);
  return all.filter((p) => below.has(p.pid) && typeOf(p) === 'renderer').map((p) => p.pid);
}

/**
 * Every Chromium process below this one (browser, renderers, GPU and utility processes), so a test can read what
 * the kernel says each one holds (e.g. its environment) without a hook in the renderer.
 */
export async function chromiumDescendants(): Promise<number[]> {
  const all = await processes();
  const below = subtree(process.pid, all);
  return all.filter((p) => p.pid !== process.pid && below.has(p.pid) && isChromium(p)).map((p) => p.pid);
}

/** The local renderer processes (local/renderer/rendererProcess.ts) this process started that still run. */
export async function runningRendererProcesses(): Promise<number[]> {
  return (await processes())
    .filter(
      (p) =>
        p.ppid === process.pid && p.state !== 'Z' && p.args.some((arg) => arg.includes('rendererProcess.ts')),
    )
    .map((p) => p.pid);
}
