import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Resident memory of this process and of every Chromium process below it. PSS (proportional set size) splits each
 * shared page among the processes that map it, so the sum is the tree's real footprint; plain RSS sums count the
 * Chromium binary's pages once per process. Both are kept; the targets use PSS.
 */
export interface ResidentMemory {
  nodePssBytes: number;
  browserPssBytes: number;
  totalPssBytes: number;
  totalRssBytes: number;
  /** Chromium processes alive at the reading (browser, GPU/utility, renderers of open contexts). */
  browserProcesses: number;
}

/** Parent pid of every process, from /proc/<pid>/stat (the field after the parenthesised command name). */
async function parentPids(): Promise<Map<number, number>> {
  const parents = new Map<number, number>();
  for (const name of await readdir('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(pid, Number(fields[1]));
    } catch {
      // The process ended while we were looking.
    }
  }
  return parents;
}

/** Pss and Rss in bytes from /proc/<pid>/smaps_rollup; zeros when the process is gone. */
async function footprint(pid: number | 'self'): Promise<{ pss: number; rss: number }> {
  try {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(rollup)?.[1] ?? 0) * 1024;
    return { pss: kb('Pss'), rss: kb('Rss') };
  } catch {
    return { pss: 0, rss: 0 };
  }
}

/** Resident memory of this process and of all its descendants (Linux /proc). */
export async function residentMemory(): Promise<ResidentMemory> {
  const parents = await parentPids();
  const descendants = new Set<number>([process.pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, ppid] of parents) {
      if (!descendants.has(pid) && descendants.has(ppid)) {
        descendants.add(pid);
        grew = true;
      }
    }
  }
  descendants.delete(process.pid);
  const node = await footprint('self');
  let browserPss = 0;
  let browserRss = 0;
  for (const pid of descendants) {
    const { pss, rss } = await footprint(pid);
    browserPss += pss;
    browserRss += rss;
  }
  return {
    nodePssBytes: node.pss,
    browserPssBytes: browserPss,
    totalPssBytes: node.pss + browserPss,
    totalRssBytes: node.rss + browserRss,
    browserProcesses: descendants.size,
  };
}

/**
 * Runs a full garbage collection before a reading, so the figure is what is kept alive, not what the collector has
 * not got round to yet. (The gc function is exposed at run time: the bench script runs without --expose-gc.)
 */
export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Disk space used under `dir` (allocated blocks, as du counts them). */
export async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch {
    return 0;
  }
  for (const name of entries) {
    const path = join(dir, name);
    try {
      const info = await lstat(path);
      total += info.blocks * 512;
      if (info.isDirectory()) total += await diskUsage(path);
    } catch {
      // Removed while we were counting.
    }
  }
  return total;
}
