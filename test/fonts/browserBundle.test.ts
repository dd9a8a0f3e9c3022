import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { FONT_SET } from '../../fonts/fontSet';
import { browserBundle, bundleLayout } from '../../shared/capture/browserBundle';
import { chromiumEnvironment } from '../../shared/capture/chromiumLaunch';
import { checksum, tableTags, withoutTables } from '../../shared/capture/openTypeTables';
import { extractTar } from '../../shared/capture/tarArchive';

const scratch = mkdtempSync(path.join(tmpdir(), 'browser-bundle-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A one-entry tar archive, as `tar` writes it (the extractor reads name, mode, size and type). */
function tarOf(name: string, body: string, type = '0'): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0, 'latin1');
  header.write('0000644\0', 100, 'latin1');
  header.write(`${Buffer.byteLength(body).toString(8).padStart(11, '0')}\0`, 124, 'latin1');
  header.write(type, 156, 'latin1');
  header.write('ustar  \0', 257, 'latin1');
  const data = Buffer.alloc(Math.ceil(Buffer.byteLength(body) / 512) * 512);
  data.write(body);
  return Buffer.concat([header, data, Buffer.alloc(1024)]);
}

describe('withoutTables', () => {
  const emoji = FONT_SET.find((font) => font.dropTables);
  const nodeModules = fileURLToPath(new URL('../../node_modules', import.meta.url));
  const original = readFileSync(path.join(nodeModules, emoji?.package ?? '', emoji?.path ?? ''));
  const trimmed = withoutTables(original, ['SVG ']);

  it('leaves the named tables out and every other one as it was', () => {
    expect(tableTags(original)).toContain('SVG ');
    expect(tableTags(trimmed)).toEqual(tableTags(original).filter((tag) => tag !== 'SVG '));
    expect(trimmed.length).toBeLessThan(original.length / 4);
  });

  it('writes a valid font: the whole-font checksum is the one OpenType asks for', () => {
    expect(checksum(trimmed)).toBe(0xb1b0afba);
  });

  it('refuses what is not a single TrueType or CFF font', () => {
    expect(() => withoutTables(Buffer.from('wOFF0000000000000000'), [])).toThrow(
      /not a single OpenType font/,
    );
  });
});

describe('extractTar', () => {
  it('writes regular files with their mode', () => {
    const into = path.join(scratch, 'plain');
    extractTar(tarOf('lib/libexample.so', 'elf'), into);
    expect(readFileSync(path.join(into, 'lib', 'libexample.so'), 'utf8')).toBe('elf');
    expect(statSync(path.join(into, 'lib', 'libexample.so')).mode & 0o777).toBe(0o644);
  });

  it('refuses entries outside its folder and kinds it does not write (links)', () => {
    expect(() => extractTar(tarOf('../elsewhere', 'x'), path.join(scratch, 'escape'))).toThrow(/outside/);
    expect(() => extractTar(tarOf('link', '', '2'), path.join(scratch, 'link'))).toThrow(/unsupported/);
  });
});

describe('the environment Chromium runs in', () => {
  const bundle = bundleLayout('/opt/browser');
  const env = chromiumEnvironment(
    {
      PATH: '/usr/bin',
      HOME: '/home/someone',
      TZ: 'Asia/Kathmandu',
      LANG: 'ja_JP.UTF-8',
      LC_ALL: 'ja_JP.UTF-8',
      FONTCONFIG_FILE: '/etc/fonts/fonts.conf',
      FONTCONFIG_PATH: '/etc/fonts',
      LD_LIBRARY_PATH: '/var/lang/lib',
      AWS_SECRET_ACCESS_KEY: 'secret',
    },
    '/tmp/chromium-1',
    bundle,
  );

  it("uses the bundle's fonts.conf and Lambda's locale, whatever the host sets", () => {
    expect(env.FONTCONFIG_FILE).toBe(bundle.fontConfigFile);
    expect(env.LANG).toBe('en_US.UTF-8');
    // The contract's default zone, whatever the host's (a page without `timezone` runs in it).
    expect(env.TZ).toBe('UTC');
    expect(env).not.toHaveProperty('LC_ALL');
    expect(env).not.toHaveProperty('FONTCONFIG_PATH');
  });

  it("keeps the font cache in the browser's temp folder and puts the bundle's libraries first", () => {
    expect(env.XDG_CACHE_HOME).toBe('/tmp/chromium-1');
    expect(env.TMPDIR).toBe('/tmp/chromium-1');
    expect(env.LD_LIBRARY_PATH).toBe(`${bundle.libraryDir}:/var/lang/lib`);
  });

  it('passes no credentials', () => {
    expect(env).not.toHaveProperty('AWS_SECRET_ACCESS_KEY');
  });
});

describe('browserBundle', () => {
  it('takes BROWSER_BUNDLE_DIR when it is set', () => {
    expect(browserBundle({ BROWSER_BUNDLE_DIR: '/somewhere' }).executablePath).toBe(
      '/somewhere/chromium/chromium',
    );
  });
});
