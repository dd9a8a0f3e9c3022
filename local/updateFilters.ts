/**
 * `npm run filters:update`: rebuilds the ad and tracker blocking engine that ships with the project
 * (shared/capture/filters/), from maintained filter lists carried by a pinned npm package, so that neither the build
 * nor a capture fetches anything. Run it, run the tests, commit both files.
 *
 * The lists come from @adguard/dnr-rulesets, which carries the text of AdGuard's filter lists beside its rule sets:
 * AdGuard Base (EasyList plus AdGuard English), AdGuard Tracking Protection (trackers, as EasyPrivacy) and AdGuard
 * Cookie Notices (cookie banners). Bump FILTER_PACKAGE to take newer lists.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { PuppeteerBlocker } from '@ghostery/adblocker-puppeteer';
import { ENGINE_FILE, FILTER_DIR, MANIFEST_FILE } from '../shared/capture/adBlocking';

const FILTER_PACKAGE = '@adguard/dnr-rulesets@3.3.20260320140136';
/** The package's rule sets whose source lists we take, by AdGuard filter id. */
const LISTS = [
  { id: 2, use: 'ads (EasyList + AdGuard English)' },
  { id: 3, use: 'trackers' },
  { id: 18, use: 'cookie notices' },
];

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'filters-'));
  try {
    execFileSync('npm', ['pack', FILTER_PACKAGE, '--pack-destination', work, '--silent'], {
      stdio: 'ignore',
    });
    const tarball = join(work, (await readdir(work)).find((name) => name.endsWith('.tgz')) ?? '');
    const wanted = LISTS.map(({ id }) => `package/dist/filters/declarative/ruleset_${id}/ruleset_${id}.json`);
    execFileSync('tar', ['xzf', tarball, '-C', work, ...wanted]);
    const lists = await Promise.all(
      LISTS.map(async ({ id, use }, index) => {
        const ruleset = JSON.parse(await readFile(join(work, wanted[index] as string), 'utf8'));
        const text: string = ruleset[0].metadata.rawFilterList;
        const header = (name: string) => new RegExp(`^! ${name}: (.*)$`, 'm').exec(text)?.[1]?.trim();
        return {
          text,
          manifest: {
            id,
            use,
            title: header('Title'),
            version: header('Version'),
            updated: header('TimeUpdated'),
            sha256: createHash('sha256').update(text).digest('hex'),
          },
        };
      }),
    );
    const engine = PuppeteerBlocker.parse(lists.map((list) => list.text).join('\n'), {
      loadCosmeticFilters: true,
      loadNetworkFilters: true,
      enableCompression: true,
    });
    const bytes = engine.serialize();
    await writeFile(join(FILTER_DIR, ENGINE_FILE), gzipSync(bytes, { level: 9 }));
    const manifest = {
      source: FILTER_PACKAGE,
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
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
