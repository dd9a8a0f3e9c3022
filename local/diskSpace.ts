import { statfs } from 'node:fs/promises';

/**
 * Free space `npm start` asks for under DATA_DIR before it starts. The embedded table (LevelDB), the local S3 API
 * and the queue's SQLite write there, inside the server's process, and the first two end the whole process when a
 * write fails (red team, round 27: every account's requests in flight were dropped). Deployed, DynamoDB, S3 and SQS
 * have no disk of ours to fill.
 */
export const MIN_FREE_BYTES = 64 * 1024 * 1024;

const megabytes = (bytes: number) => Math.floor(bytes / (1024 * 1024));

/** Refuses to start on a disk with less than `minFree` bytes free for this user, saying where and what to do. */
export async function assertFreeSpace(dir: string, minFree = MIN_FREE_BYTES): Promise<void> {
  const { bavail, bsize } = await statfs(dir);
  const free = bavail * bsize;
  if (free >= minFree) return;
  throw new Error(
    `Only ${megabytes(free)} MB are free on the disk of ${dir}, where the table, the images and the queue are ` +
      `kept: npm start needs ${megabytes(minFree)} MB. Free some space, or choose another DATA_DIR`,
  );
}

/** Whether an error is a write that found the disk full (Node's ENOSPC, or LevelDB's IO error saying so). */
export function isDiskFull(error: unknown): boolean {
  return (
    (error as NodeJS.ErrnoException | undefined)?.code === 'ENOSPC' ||
    /No space left on device/.test(String((error as Error | undefined)?.message))
  );
}
