import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, open, rename, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { constants, zstdCompressSync, zstdDecompress } from 'node:zlib';
import { type BrowserBundle, BUNDLE_MANIFEST, browserBundle } from './browserBundle';

/**
 * Chromium as the Lambda layer carries it: zstd-compressed, in parts. Unpacked it is 209 MB (more with each release),
 * which with the fonts would leave the renderer function no room under its 200 MiB budget; packed it is about 80 MB.
 * The parts are inflated side by side (zlib runs on libuv's thread pool) straight into their place in the function's
 * temp folder at the first launch of a sandbox, which costs a few hundred milliseconds of the cold start
 * (docs/performance.md). zstd, not gzip or brotli: it inflates about 2.5 times as fast as gzip, from fewer bytes.
 */
export const PACKED_CHROMIUM_DIR = 'chromium-packed';
/** Names the packing: a packed tree of another format (an older cache, an older layer) is not mistaken for this one. */
export const PACKING = 'zstd-v1';
const PART_SUFFIX = '.zst';
/** Small enough that every thread of the pool has a part to inflate, large enough to compress well. */
const PART_BYTES = 16 * 1024 * 1024;
/**
 * Inflating speed barely depends on the level; a higher one packs smaller (this one 79 MB against level 3's 88 MB)
 * for a few seconds more of the layer build. Level 19 took minutes here for 10 % less.
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
      zstdCompressSync(bytes, { params: { [constants.ZSTD_c_compressionLevel]: LEVEL } }),
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

/**
 * Reads every part and hands it to the thread pool at once, synchronously: started at the top of a cold start
 * (earlyChromium.ts), the inflating runs while the main thread is still loading the function's code, which would
 * otherwise leave the second core idle. Each part is then written at its own offset as soon as it is inflated: no
 * copy of the whole binary in memory, and the writes overlap the other parts' inflating.
 */
function unpack(bundle: BrowserBundle, dir: string): Promise<string> {
  const executable = join(dir, 'chromium');
  if (existsSync(executable)) return Promise.resolve(executable);
  try {
    const packedDir = join(bundle.dir, PACKED_CHROMIUM_DIR);
    const parts = readdirSync(packedDir)
      .filter((name) => name.endsWith(PART_SUFFIX))
      .sort();
    if (parts.length === 0) throw new Error(`No ${PACKING} parts in ${packedDir}`);
    const inflating = parts.map((name, index) =>
      // One output chunk per part: zlib's default is 16 KiB, each a round trip to the thread pool, which alone made
      // inflating twice as slow.
      inflate(readFileSync(join(packedDir, name)), { chunkSize: PART_BYTES }).then((bytes) => {
        if (bytes.length > PART_BYTES || (bytes.length < PART_BYTES && index < parts.length - 1)) {
          throw new Error(`${name} inflates to ${bytes.length} bytes`);
        }
        return bytes;
      }),
    );
    // Awaited below, once the file is open; a failure before then must not go unhandled meanwhile.
    for (const part of inflating) part.catch(() => undefined);
    return writeUnpacked(bundle, executable, inflating);
  } catch (error) {
    return Promise.reject(error);
  }
}

async function writeUnpacked(
  bundle: BrowserBundle,
  executable: string,
  inflating: Promise<Buffer>[],
): Promise<string> {
  const dir = dirname(executable);
  await mkdir(dir, { recursive: true });
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
    await Promise.all(
      inflating.map(async (part, index) => {
        const bytes = await part;
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

/**
 * CHROMIUM_PATH points at another binary (e.g. for debugging); by default the browser bundle's (the layer's when
 * deployed, inflated into the temp folder at the first launch; an unpacked copy of the @sparticuz/chromium build
 * locally).
 */
export async function chromiumExecutable(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.CHROMIUM_PATH) return env.CHROMIUM_PATH;
  const bundle = browserBundle(env);
  return isPacked(bundle) ? unpackedChromium(bundle, env.TMPDIR ?? tmpdir()) : bundle.executablePath;
}

function manifestKey(bundle: BrowserBundle): string {
  try {
    return (JSON.parse(readFileSync(join(bundle.dir, BUNDLE_MANIFEST), 'utf8')) as { key: string }).key;
  } catch {
    return 'unversioned';
  }
}
