import { randomBytes } from 'node:crypto';
import { type FileHandle, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Creates `path`, readable by its owner only, holding `data` whole or not at all: false, with nothing written, when
 * the file exists already (another process made it first). A write that fails (a full disk) removes the file it
 * created: a key written straight to its file was left empty there, and every later start took it for its key (red
 * team, round 27). Plain files only (no hard link or rename), so that any file system the data dir is on will do.
 */
export async function createWhole(path: string, data: Buffer | string): Promise<boolean> {
  let file: FileHandle;
  try {
    file = await open(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    await file.writeFile(data);
    await file.sync();
    await file.close();
    return true;
  } catch (error) {
    await file.close().catch(() => undefined);
    await rm(path, { force: true });
    throw error;
  }
}

/** How long a file another process is creating (createWhole) is waited for. */
const CREATION_WAIT_MS = 5_000;
const READ_AGAIN_MS = 50;

/**
 * The content of a file that another process may be creating at this moment (createWhole): read again until
 * `whole` holds of it or five seconds have passed (a disk under load), then returned as it is.
 */
export async function readWhole(path: string, whole: (content: Buffer) => boolean): Promise<Buffer> {
  for (let waited = 0; ; waited += READ_AGAIN_MS) {
    const content = await readFile(path);
    if (whole(content) || waited >= CREATION_WAIT_MS) return content;
    await sleep(READ_AGAIN_MS);
  }
}

/**
 * Puts `data` in `path` (owner-only) in place of what it held, whole or not at all: written beside it under a name of
 * its own, then renamed over it, so that no reader sees half of it and writers at the same moment do not collide.
 */
export async function replaceWhole(path: string, data: string): Promise<void> {
  const draft = `${path}.${randomBytes(6).toString('hex')}.new`;
  try {
    await writeFile(draft, data, { mode: 0o600 });
    await rename(draft, path);
  } catch (error) {
    await rm(draft, { force: true });
    throw error;
  }
}
