import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { replaceWhole } from '../shared/store/wholeFile';

/**
 * The layout of what `npm start` keeps under DATA_DIR, raised with each change that an older version cannot read:
 * an older version then refuses the folder instead of failing on its data (red team, round 28: after a rollback, jobs
 * whose request a newer version kept apart failed 500). Versions before this mark read none.
 */
export const DATA_FORMAT = 1;

const FORMAT_FILE = 'data-format';

/**
 * Refuses a data dir that a newer version wrote (a mark above ours), or whose mark this version cannot read (any
 * other content: a later version may write more), and marks any other, replacing the file whole.
 */
export async function claimDataFormat(dataDir: string): Promise<void> {
  const file = join(dataDir, FORMAT_FILE);
  const kind = await stat(file).catch(() => undefined);
  // A FIFO would be read for ever, a folder not at all (red team, round 29).
  if (kind && !kind.isFile()) throw new Error(`${file} is not a file: remove it, or choose another DATA_DIR`);
  const text = kind ? await readFile(file, 'utf8') : '0';
  const found = /^\d+\n?$/.test(text) ? Number(text) : Number.NaN;
  if (!(found <= DATA_FORMAT)) {
    throw new Error(
      `${dataDir} was written by a newer version of this service (its ${FORMAT_FILE} says ${JSON.stringify(text.trim())}; ` +
        `this one reads up to ${DATA_FORMAT}): start the newer version, or choose another DATA_DIR`,
    );
  }
  // `npm start` and `npm run credits` may mark a new folder at the same moment.
  if (found < DATA_FORMAT) await replaceWhole(file, `${DATA_FORMAT}\n`);
}
