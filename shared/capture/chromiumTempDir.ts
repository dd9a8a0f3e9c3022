import { mkdtemp, readdir, rm, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The files Chromium backs shared memory with outside /dev/shm: puppeteer passes `--disable-dev-shm-usage`, and
 * Lambda has no /dev/shm, so they go to Chromium's TMPDIR.
 */
const SHARED_MEMORY_PREFIX = '.org.chromium.Chromium.';

/**
 * Chromium unlinks each of those files right after creating it. With software compositing, a renderer killed when
 * its context closes sometimes leaves one behind (about one context in seven here, some 256 KiB of a page's
 * pixels), so a file still there after this long is a leftover, and removing it is safe: a process that still maps
 * it keeps its memory.
 */
export const LEFTOVER_AFTER_MS = 5_000;

/** A temp folder of Chromium's own, so its leftovers can be swept without touching anything else. */
export interface ChromiumTempDir {
  path: string;
  /** Removes shared-memory leftovers older than LEFTOVER_AFTER_MS; resolves to how many went. */
  sweep(now?: number): Promise<number>;
  /** Removes the folder and all in it, once its browser is gone. */
  remove(): Promise<void>;
}

export async function createChromiumTempDir(parent: string): Promise<ChromiumTempDir> {
  const path = await mkdtemp(join(parent, 'chromium-'));
  return {
    path,
    async sweep(now = Date.now()) {
      const names = await readdir(path).catch(() => [] as string[]);
      let removed = 0;
      for (const name of names) {
        if (!name.startsWith(SHARED_MEMORY_PREFIX)) continue;
        const file = join(path, name);
        const info = await stat(file).catch(() => undefined);
        if (!info || now - info.mtimeMs < LEFTOVER_AFTER_MS) continue;
        // Already gone (an overlapping sweep) is as good as removed here.
        const unlinked = await unlink(file).then(
          () => true,
          () => false,
        );
        if (unlinked) removed++;
      }
      return removed;
    },
    // Chromium's child processes may still create and unlink files in it while they exit, which fails a removal
    // with ENOTEMPTY: Node's retries (for that error among others) outlast them.
    remove: () => rm(path, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }),
  };
}
