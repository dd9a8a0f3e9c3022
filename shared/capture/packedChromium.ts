import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, symlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { constants, zstdCompressSync, zstdDecompress } from 'node:zlib';
import { type BrowserBundle, BUNDLE_MANIFEST } from './browserBundle';

/**
 * Chromium as the Lambda layer carries it: zstd-compressed, in parts. Unpacked it is 209 MB (more with each release),
 * which with the fonts would leave the renderer function no room under its 200 MiB budget; packed it is about 80 MB.
 * The parts are inflated side by side (zlib runs on libuv's thread pool) straight into their place in the function's
 * temp folder at the first launch of a sandbox, which costs a few hundred milliseconds of the cold start
 * (docs/performance.md). zstd, not gzip or brotli: it inflates about three times as fast as gzip, from fewer bytes.
 */
export const PACKED_CHROMIUM_DIR = 'chromium-packed';
/** Names the packing: a packed tree of another format (an older cache, an older layer) is not mistaken for this one. */
export const PACKING = 'zstd-v1';
const PART_SUFFIX = '.zst';
/** Small enough that every thread of the pool has a part to inflate, large enough to compress well. */
const PART_BYTES = 16 * 1024 * 1024;
/**
 * Decompression speed barely depends on the level; a higher one packs smaller (this one 79 MB against level 3's
 * 88 MB) and costs the layer build a few seconds. Levels above about 12 take minutes for little more.
 */
const LEVEL = 9;
const inflate = promisify(zstdDecompress);

/** Writes `executable` into `outDir` as numbered zstd parts (the layer build). */
export function packChromium(executable: string, outDir: string): void {
  const binary = readFileSync(executable);
  mkdirSync(outDir, { recursive: true });
  for (let offset = 0, part = 0; offset < binary.length; offset += PART_BYTES, part++) {
    const name = `part-${String(part).padStart(3, '0')}${PART_SUFFIX}`;
    const bytes = binary.subarray(offset, offset + PART_BYTES);
    writeFileSync(
      join(outDir, name),
      zstdCompressSync(bytes, {
        params: {
          [constants.ZSTD_c_compressionLevel]: LEVEL,
          // The part's size in its frame header lets the inflating side check what it got.
          [constants.ZSTD_c_contentSizeFlag]: 1,
        },
      }),
    );
  }
}

/** True when the bundle carries Chromium packed rather than ready to run. */
export function isPacked(bundle: BrowserBundle): boolean {
  return !existsSync(bundle.executablePath) && existsSync(join(bundle.dir, PACKED_CHROMIUM_DIR));
}

const unpacked = new Map<string, Promise<string>>();

/**
 * The bundle's Chromium, inflated once per process into `tempRoot` (once per sandbox: a warm start finds it there),
 * with the SwiftShader libraries linked beside it, where Chromium looks for them. Returns the executable's path.
 */
export function unpackedChromium(bundle: BrowserBundle, tempRoot: string): Promise<string> {
  const dir = join(tempRoot, `chromium-${basename(bundle.dir)}-${manifestKey(bundle)}`);
  let ready = unpacked.get(dir);
  if (!ready) {
    ready = unpack(bundle, dir);
    unpacked.set(dir, ready);
    ready.catch(() => unpacked.delete(dir));
  }
  return ready;
}

async function unpack(bundle: BrowserBundle, dir: string): Promise<string> {
  const executable = join(dir, 'chromium');
  if (existsSync(executable)) return executable;
  const packedDir = join(bundle.dir, PACKED_CHROMIUM_DIR);
  const [names] = await Promise.all([readdir(packedDir), mkdir(dir, { recursive: true })]);
  const parts = names.filter((name) => name.endsWith(PART_SUFFIX)).sort();
  if (parts.length === 0) throw new Error(`No ${PACKING} parts in ${packedDir}`);
  const libraries = dirname(bundle.executablePath);
  await Promise.all(
    readdirSync(libraries).map((name) =>
      symlink(join(libraries, name), join(dir, name)).catch(() => undefined),
    ),
  );
  // Written aside and renamed: a process that finds `chromium` finds all of it.
  const partial = `${executable}.${process.pid}`;
  const file = await open(partial, 'w', 0o755);
  try {
    // Each part goes to its own offset as soon as it is inflated: no copy of the whole binary in memory, and the
    // writes overlap the other parts' inflating. One output chunk per part (zlib's default is 16 KiB, each a round
    // trip to the thread pool: that alone made inflating twice as slow).
    await Promise.all(
      parts.map(async (name, index) => {
        const bytes = await inflate(await readFile(join(packedDir, name)), { chunkSize: PART_BYTES });
        if (bytes.length > PART_BYTES || (bytes.length < PART_BYTES && index < parts.length - 1)) {
          throw new Error(`${name} inflates to ${bytes.length} bytes`);
        }
        await file.write(bytes, 0, bytes.length, index * PART_BYTES);
      }),
    );
  } catch (error) {
    await file.close();
    await rm(partial, { force: true });
    throw error;
  }
  await file.close();
  await rename(partial, executable);
  return executable;
}

function manifestKey(bundle: BrowserBundle): string {
  try {
    return (JSON.parse(readFileSync(join(bundle.dir, BUNDLE_MANIFEST), 'utf8')) as { key: string }).key;
  } catch {
    return 'unversioned';
  }
}
