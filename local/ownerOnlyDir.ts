import { chmod, mkdir } from 'node:fs/promises';

/**
 * `path` as a folder only its owner may enter (0700), made if missing and narrowed if an older run left it open: what
 * the local service keeps there (every account's images, the table, the queue) is read by its files, past every gate
 * its ports have, so another user of the machine must not get to them (red team: with the usual umask they could).
 */
export async function ownerOnlyDir(path: string): Promise<string> {
  await mkdir(path, { recursive: true, mode: 0o700 });
  await chmod(path, 0o700);
  return path;
}
