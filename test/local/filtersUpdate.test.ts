import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FILTER_DIR, FILTER_SETS } from '../../shared/capture/adBlocking';

const run = promisify(execFile);

/** `npm run filters:update` on a machine that cannot reach GitHub. */

let dir: string;
let offline: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'filters-offline-'));
  offline = join(dir, 'offline.mjs');
  // What Node's fetch throws when the name does not resolve, as on a machine without network.
  await writeFile(
    offline,
    `globalThis.fetch = async () => {
      const cause = Object.assign(new Error('getaddrinfo ENOTFOUND raw.githubusercontent.com'), { code: 'ENOTFOUND' });
      throw new TypeError('fetch failed', { cause });
    };\n`,
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const digestOf = async (file: string) =>
  createHash('sha256')
    .update(await readFile(join(FILTER_DIR, file)))
    .digest('hex');
/** Every file the command writes: each filter set's engine and manifest. */
const writtenFiles = Object.values(FILTER_SETS).flatMap((set) => [set.engine, set.manifest]);

describe('filters:update offline', () => {
  it('exits 1 with one clear line that names the way out, no stack trace, and changes no file', async () => {
    const before = await Promise.all(writtenFiles.map(digestOf));
    const failed = await run(
      process.execPath,
      ['--import', 'tsx', '--import', pathToFileURL(offline).href, 'local/updateFilters.ts'],
      { env: process.env },
    ).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    const { stderr } = failed as { stderr: string };
    expect(stderr).toMatch(/^filters:update failed: could not download \S+ .*\(ENOTFOUND\).*--from <dir>/);
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(await Promise.all(writtenFiles.map(digestOf))).toEqual(before);
  });
});
