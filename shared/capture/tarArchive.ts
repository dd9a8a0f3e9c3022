import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';

const BLOCK = 512;

/**
 * Writes the folders and regular files of a tar archive (ustar or GNU, the form @sparticuz/chromium packs its
 * libraries in) under `into`. Any other kind of entry, or a path leading outside `into`, is an error: the archives
 * come from a pinned package, and anything unexpected in them should stop the build, not be skipped.
 */
export function extractTar(archive: Buffer, into: string): void {
  const root = resolve(into);
  for (let at = 0; at + BLOCK <= archive.length; ) {
    const header = archive.subarray(at, at + BLOCK);
    if (header.every((byte) => byte === 0)) return; // the end-of-archive blocks
    const name = field(header, 0, 100);
    // POSIX ustar may split a long path into a prefix; GNU tar uses those bytes for other things.
    const prefix = header.toString('latin1', 257, 263) === 'ustar\u000000' ? field(header, 345, 155) : '';
    const path = prefix ? `${prefix}/${name}` : name;
    const mode = Number.parseInt(field(header, 100, 8), 8) & 0o777;
    const size = Number.parseInt(field(header, 124, 12) || '0', 8);
    const type = String.fromCharCode(header[156] ?? 0);
    const target = resolve(root, path);
    if (target !== root && !target.startsWith(root + sep))
      throw new Error(`tar entry outside its folder: ${path}`);

    if (type === '5') {
      mkdirSync(target, { recursive: true });
    } else if (type === '0' || type === '\0') {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, archive.subarray(at + BLOCK, at + BLOCK + size), { mode });
    } else {
      throw new Error(`unsupported tar entry type '${type}' for ${path}`);
    }
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
}

/** A NUL-terminated (or full-width) text field of a tar header. */
function field(header: Buffer, start: number, length: number): string {
  const bytes = header.subarray(start, start + length);
  const end = bytes.indexOf(0);
  return bytes.toString('latin1', 0, end === -1 ? length : end).trim();
}
