import { readdir, readFile, lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface ResidentMemory {
  /** This node process. */
  nodeBytes: number;
  /** Every Chromium process below it (browser, GPU, renderers), summed. */
  browserBytes: number;
  totalBytes: number;
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

async function rssBytes(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
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
  let browserBytes = 0;
  for (const pid of descendants) browserBytes += await rssBytes(pid);
  const nodeBytes = process.memoryUsage().rss;
  return { nodeBytes, browserBytes, totalBytes: nodeBytes + browserBytes };
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
