/**
 * `npm run filters:update`: rebuilds the blocking engines that ship with the project (shared/capture/filters/), so
 * that neither the build nor a capture fetches anything. Run it, run the tests, commit the files it writes.
 *
 * - `ads` (blockAds): EasyList (ads), EasyPrivacy (trackers) and the EasyList Cookie List (cookie notices), as the
 *   Ghostery adblocker repository keeps them for its own tests.
 * - `chats` (blockChats): Fanboy's Anti-Chat List (chat and support widgets), from the EasyList repository, where it
 *   is part of Fanboy's Annoyance List.
 *
 * Each is taken at the commit pinned in its source (no npm package carries them). Bump the commit to take newer
 * lists; the manifests record each list's version and hash. `-- --from <dir>` reads the files from a folder instead
 * (checkouts of those folders, for a machine without GitHub); `-- --only <set>` rebuilds one engine.
 */
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { FiltersEngine } from '@ghostery/adblocker';
import { FILTER_DIR, FILTER_SETS, type FilterSet } from '../shared/capture/adBlocking';

interface ListSource {
  repository: string;
  commit: string;
  folder: string;
  license: string;
  lists: { file: string; use: string }[];
}

const SOURCES: Record<FilterSet, ListSource> = {
  ads: {
    repository: 'ghostery/adblocker',
    commit: 'ff8ed92b3648bdf49ba884b7d90c46d3dda4c366',
    folder: 'packages/adblocker/assets/easylist',
    license: 'EasyList: GPL-3.0-or-later or CC-BY-SA-3.0 (https://easylist.to/pages/licence.html)',
    lists: [
      { file: 'easylist.txt', use: 'ads' },
      { file: 'easyprivacy.txt', use: 'trackers' },
      { file: 'easylist-cookie.txt', use: 'cookie notices' },
    ],
  },
  chats: {
    repository: 'easylist/easylist',
    commit: '00c04b2d57d60f1a00dfe31007f73b4e8ec7f92e',
    folder: 'fanboy-addon',
    license: 'CC-BY-3.0 (http://creativecommons.org/licenses/by/3.0/)',
    lists: [{ file: 'fanboy_chatapps_third-party.txt', use: 'chat widgets' }],
  },
};

async function listText(source: ListSource, file: string, from: string | undefined): Promise<string> {
  if (from) return readFile(join(from, file), 'utf8');
  const url = `https://raw.githubusercontent.com/${source.repository}/${source.commit}/${source.folder}/${file}`;
  const response = await fetch(url).catch((error: Error & { cause?: { code?: string } }) => {
    throw new Error(
      `could not download ${file} from raw.githubusercontent.com (${error.cause?.code ?? error.message}). ` +
        'Check the network, or pass -- --from <dir> with the three list files.',
    );
  });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.text();
}

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

async function build(set: FilterSet, from: string | undefined): Promise<void> {
  const source = SOURCES[set];
  const lists = await Promise.all(
    source.lists.map(async ({ file, use }) => {
      const text = await listText(source, file, from);
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
  const files = FILTER_SETS[set];
  await writeFile(join(FILTER_DIR, files.engine), gzipSync(bytes, { level: 9 }));
  const manifest = {
    source: `https://github.com/${source.repository}/tree/${source.commit}/${source.folder}`,
    license: source.license,
    engine: {
      file: files.engine,
      // Of the serialized engine, before gzip.
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    },
    lists: lists.map((list) => list.manifest),
  };
  await writeFile(join(FILTER_DIR, files.manifest), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(JSON.stringify(manifest, null, 2));
}

async function main(): Promise<void> {
  const from = argument('--from');
  const only = argument('--only');
  if (only !== undefined && !(only in SOURCES))
    throw new Error(`--only takes one of ${Object.keys(SOURCES).join(', ')}`);
  const sets = only === undefined ? (Object.keys(SOURCES) as FilterSet[]) : [only as FilterSet];
  for (const set of sets) await build(set, from);
}

// A clear line and exit code 1 instead of a stack trace; nothing was written.
await main().catch((error: Error) => {
  process.stderr.write(`filters:update failed: ${error.message}\n`);
  process.exit(1);
});
