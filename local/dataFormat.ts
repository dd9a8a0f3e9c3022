import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The layout of what `npm start` keeps under DATA_DIR, raised with each change that an older version cannot read:
 * an older version then refuses the folder instead of failing on its data (red team, round 28: after a rollback, jobs
 * whose request a newer version kept apart failed 500). Versions before this marker read none.
 */
export const DATA_FORMAT = 1;

const FORMAT_FILE = 'data-format';

/** Refuses a data dir that a newer version wrote (a format above ours), and marks any other with ours. */
export async function claimDataFormat(dataDir: string): Promise<void> {
  const file = join(dataDir, FORMAT_FILE);
  const found = Number((await readFile(file, 'utf8').catch(() => '0')).trim());
  if (found > DATA_FORMAT) {
    throw new Error(
      `${dataDir} was written by a newer version of this service (data format ${found}; this one reads up to ` +
        `${DATA_FORMAT}): start the newer version, or choose another DATA_DIR`,
    );
  }
  if (found !== DATA_FORMAT) await writeFile(file, `${DATA_FORMAT}\n`, { mode: 0o600 });
}
