import { statfs } from 'node:fs/promises';

/**
 * Free space `npm start` asks for under DATA_DIR before it starts. The embedded table (LevelDB), the local S3 API
 * and the queue's SQLite write there, inside the server's process, and the first two end the whole process when a
 * write fails (red team, round 27: every account's requests in flight were dropped). Deployed, DynamoDB, S3 and SQS
 * have no disk of ours to fill.
 */
export const MIN_FREE_BYTES = 64 * 1024 * 1024;

const megabytes = (bytes: number) => Math.floor(bytes / (1024 * 1024));

/** The bytes this user may still write on the disk of `dir`. */
async function freeBytes(dir: string): Promise<number> {
  const { bavail, bsize } = await statfs(dir);
  return bavail * bsize;
}

/** Refuses to start on a disk with less than `minFree` bytes free for this user, saying where and what to do. */
export async function assertFreeSpace(dir: string, minFree = MIN_FREE_BYTES): Promise<void> {
  const free = await freeBytes(dir);
  if (free >= minFree) return;
  throw new Error(
    `Only ${megabytes(free)} MB are free on the disk of ${dir}, where the table, the images and the queue are ` +
      `kept: npm start needs ${megabytes(minFree)} MB. Free some space, or choose another DATA_DIR`,
  );
}

/**
 * Free space the local table and S3 API keep back: below it they refuse writes, which their clients answer `503`,
 * instead of handing them to dynalite or s3rver, which end the server's process when a write finds the disk full.
 */
export const WRITE_RESERVE_BYTES = 32 * 1024 * 1024;

/**
 * Room for a write of `bytes` (and the reserve) now: undefined when there is none, else a function that gives the
 * room back once the write is done. Until then it counts as taken, so that writes running side by side cannot each
 * find the same free space (red team, round 29: four writes of 30 MiB passed on 100 MB free and filled the disk).
 */
export type DiskRoom = (bytes: number) => Promise<(() => void) | undefined>;

/**
 * The room left on the disk of `dir`, read at each write (statfs, a few microseconds), less the writes under way. A
 * disk that cannot be read (the folder deleted under the server) has none: the write is refused, never thrown into
 * the gate's handler.
 */
export function diskRoom(dir: string, reserve = WRITE_RESERVE_BYTES): DiskRoom {
  let underWay = 0;
  return async (bytes) => {
    const free = await freeBytes(dir).catch(() => 0);
    if (free < reserve + underWay + bytes) return undefined;
    underWay += bytes;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      underWay -= bytes;
    };
  };
}

/** Whether an error is a write that found the disk full (Node's ENOSPC, or LevelDB's IO error saying so). */
export function isDiskFull(error: unknown): boolean {
  return (
    (error as NodeJS.ErrnoException | undefined)?.code === 'ENOSPC' ||
    /No space left on device/.test(String((error as Error | undefined)?.message))
  );
}
