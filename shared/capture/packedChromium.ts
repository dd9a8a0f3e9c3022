import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzipSync } from 'node:zlib';
import { type BrowserBundle, BUNDLE_MANIFEST } from './browserBundle';

/**
 * Chromium as the Lambda layer carries it: gzip-compressed, in parts. Unpacked it is 190 MB (more with each release),
 * which with the fonts would leave the renderer function no room under its 200 MiB budget; packed it is 90 MB. The
 * parts are inflated side by side (zlib runs on libuv's thread pool) into the function's temp folder at the first
 * launch of a sandbox, which costs a few hundred milliseconds of the cold start (docs/performance.md). gzip, not
 * brotli: it inflates more than twice as fast, for a quarter more bytes.
 */
export const PACKED_CHROMIUM_DIR = 'chromium-packed';
/** Small enough that every thread of the pool has a part to inflate, large enough to compress well. */
const PART_BYTES = 16 * 1024 * 1024;
const inflate = promisify(gunzip);

/** Writes `executable` into `outDir` as numbered gzip parts (the layer build). */
export function packChromium(executable: string, outDir: string): void {
  const binary = readFileSync(executable);
  mkdirSync(outDir, { recursive: true });
  for (let offset = 0, part = 0; offset < binary.length; offset += PART_BYTES, part++) {
    const name = `part-${String(part).padStart(3, '0')}.gz`;
    writeFileSync(join(outDir, name), gzipSync(binary.subarray(offset, offset + PART_BYTES)));
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
  const parts = (await readdir(packedDir)).filter((name) => name.endsWith('.gz')).sort();
  const [inflated] = await Promise.all([
    Promise.all(parts.map(async (name) => inflate(await readFile(join(packedDir, name))))),
    mkdir(dir, { recursive: true }),
  ]);
  const libraries = dirname(bundle.executablePath);
  await Promise.all(
    readdirSync(libraries).map((name) =>
      symlink(join(libraries, name), join(dir, name)).catch(() => undefined),
    ),
  );
  // Written aside and renamed: a process that finds `chromium` finds all of it.
  const partial = `${executable}.${process.pid}`;
  await writeFile(partial, Buffer.concat(inflated), { mode: 0o755 });
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
