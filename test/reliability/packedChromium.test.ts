import { constants as fsConstants } from 'node:fs';
import { access, mkdir, mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { zstdCompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleLayout } from '../../shared/capture/browserBundle';
import {
  isPacked,
  PACKED_CHROMIUM_DIR,
  packChromium,
  unpackedChromium,
} from '../../shared/capture/packedChromium';

/** More than one part (16 MiB each), with content that tells every offset apart, so a misplaced part shows. */
const BINARY_BYTES = 16 * 1024 * 1024 + 123_457;

let root: string;
let binary: Buffer;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'packed-chromium-test-'));
  binary = Buffer.alloc(BINARY_BYTES);
  for (let offset = 0; offset + 4 <= BINARY_BYTES; offset += 4) binary.writeUInt32LE(offset, offset);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A bundle as the layer lays it out: the binary packed, a library beside where the executable goes. */
async function packedBundle(name: string) {
  const layout = bundleLayout(join(root, name));
  await mkdir(dirname(layout.executablePath), { recursive: true });
  await writeFile(join(dirname(layout.executablePath), 'libGLESv2.so'), 'library');
  const source = join(root, `${name}-source`);
  await writeFile(source, binary);
  packChromium(source, join(layout.dir, PACKED_CHROMIUM_DIR));
  return layout;
}

describe('Chromium packed in parts', () => {
  it('inflates into an executable identical to the packed one, with the libraries linked beside it', async () => {
    const layout = await packedBundle('whole');
    expect(isPacked(layout)).toBe(true);
    const parts = await readdir(join(layout.dir, PACKED_CHROMIUM_DIR));
    expect(parts).toEqual(['part-000.zst', 'part-001.zst']);
    const temp = await mkdtemp(join(root, 'temp-'));
    const executable = await unpackedChromium(layout, temp);
    expect((await readFile(executable)).equals(binary)).toBe(true);
    await access(executable, fsConstants.X_OK);
    expect(await readlink(join(dirname(executable), 'libGLESv2.so'))).toBe(
      join(dirname(layout.executablePath), 'libGLESv2.so'),
    );
    // Nothing else is left in the folder: the copy was written aside and renamed.
    expect((await readdir(dirname(executable))).sort()).toEqual(['chromium', 'libGLESv2.so']);
  });

  it('refuses a part that inflates to the wrong size, and leaves no executable and no partial copy', async () => {
    const layout = await packedBundle('short-part');
    // A first part one byte short would shift the rest of the binary.
    await writeFile(
      join(layout.dir, PACKED_CHROMIUM_DIR, 'part-000.zst'),
      zstdCompressSync(binary.subarray(0, 16 * 1024 * 1024 - 1)),
    );
    const temp = await mkdtemp(join(root, 'temp-'));
    await expect(unpackedChromium(layout, temp)).rejects.toThrow(/part-000\.zst inflates to/);
    const [dir] = await readdir(temp);
    expect(dir).toBeDefined();
    expect(await readdir(join(temp, dir ?? ''))).toEqual(['libGLESv2.so']);
  });

  it('refuses a tree packed another way (an older layer or cache) instead of launching half a binary', async () => {
    const layout = bundleLayout(join(root, 'gzip-packed'));
    await mkdir(join(layout.dir, PACKED_CHROMIUM_DIR), { recursive: true });
    await writeFile(join(layout.dir, PACKED_CHROMIUM_DIR, 'part-000.gz'), 'old');
    const temp = await mkdtemp(join(root, 'temp-'));
    await expect(unpackedChromium(layout, temp)).rejects.toThrow(/No zstd-v1 parts/);
  });
});
