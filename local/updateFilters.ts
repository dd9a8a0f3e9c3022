/**
 * `npm run filters:update`: rebuilds the ad and tracker blocking engine that ships with the project
 * (shared/capture/filters/), so that neither the build nor a capture fetches anything. Run it, run the tests, commit
 * both files.
 *
 * The lists are EasyList (ads), EasyPrivacy (trackers) and the EasyList Cookie List (cookie notices), as the
 * Ghostery adblocker repository keeps them for its own tests, taken at the commit pinned in SOURCE_COMMIT (no npm
 * package carries them). Bump the commit to take newer lists; the manifest records each list's version and hash.
 * `-- --from <dir>` reads the three files from a folder instead (a checkout of that repository's
 * packages/adblocker/assets/easylist/, for a machine without GitHub).
 */
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { FiltersEngine } from '@ghostery/adblocker';
import { ENGINE_FILE, FILTER_DIR, MANIFEST_FILE } from '../shared/capture/adBlocking';

const SOURCE_REPOSITORY = 'ghostery/adblocker';
const SOURCE_COMMIT = 'ff8ed92b3648bdf49ba884b7d90c46d3dda4c366';
const SOURCE_FOLDER = 'packages/adblocker/assets/easylist';
const LISTS = [
  { file: 'easylist.txt', use: 'ads' },
  { file: 'easyprivacy.txt', use: 'trackers' },
  { file: 'easylist-cookie.txt', use: 'cookie notices' },
];

async function listText(file: string, from: string | undefined): Promise<string> {
  if (from) return readFile(join(from, file), 'utf8');
  const url = `https://raw.githubusercontent.com/${SOURCE_REPOSITORY}/${SOURCE_COMMIT}/${SOURCE_FOLDER}/${file}`;
  const response = await fetch(url).catch((error: Error & { cause?: { code?: string } }) => {
    throw new Error(
      `could not download ${file} from raw.githubusercontent.com (${error.cause?.code ?? error.message}). ` +
        'Check the network, or pass -- --from <dir> with the three list files.',
    );
  });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.text();
}

async function main(): Promise<void> {
  const fromIndex = process.argv.indexOf('--from');
  const from = fromIndex >= 0 ? process.argv[fromIndex + 1] : undefined;
  const lists = await Promise.all(
    LISTS.map(async ({ file, use }) => {
      const text = await listText(file, from);
      const header = (name: string) => new RegExp(`^! ${name}: (.*)$`, 'm').exec(text)?.[1]?.trim();
      if (!header('Title')) throw new Error(`${file} is not a filter list (no "! Title:" line)`);
      return {
        text,
        manifest: {
          file,
          use,
          title: header('Title'),
          version: header('Version'),
          updated: header('Last modified'),
          sha256: createHash('sha256').update(text).digest('hex'),
        },
      };
    }),
  );
  const engine = FiltersEngine.parse(lists.map((list) => list.text).join('\n'), {
    loadCosmeticFilters: true,
    loadNetworkFilters: true,
    enableCompression: true,
  });
  const bytes = engine.serialize();
  await writeFile(join(FILTER_DIR, ENGINE_FILE), gzipSync(bytes, { level: 9 }));
  const manifest = {
    source: `https://github.com/${SOURCE_REPOSITORY}/tree/${SOURCE_COMMIT}/${SOURCE_FOLDER}`,
    license: 'EasyList: GPL-3.0-or-later or CC-BY-SA-3.0 (https://easylist.to/pages/licence.html)',
    engine: {
      file: ENGINE_FILE,
      // Of the serialized engine, before gzip.
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    },
    lists: lists.map((list) => list.manifest),
  };
  await writeFile(join(FILTER_DIR, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(JSON.stringify(manifest, null, 2));
}

// A clear line and exit code 1 instead of a stack trace; nothing was written.
await main().catch((error: Error) => {
  process.stderr.write(`filters:update failed: ${error.message}\n`);
  process.exit(1);
});
