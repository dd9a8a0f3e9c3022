import { accessSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FONT_SET } from '../../fonts/fontSet';
import { LAYER_BUNDLE_PATH } from '../../infra/chromiumLayer';
import { PROJECT_ROOT } from '../../infra/stack';
import {
  BUNDLE_MANIFEST,
  type BundleManifest,
  bundleLayout,
  LAYER_BUNDLE_DIR,
  localBundleDir,
} from '../../shared/capture/browserBundle';
import { DEVICE_PRESETS } from '../../shared/capture/devices';
import { tableTags } from '../../shared/capture/openTypeTables';
import { isPacked, unpackedChromium } from '../../shared/capture/packedChromium';
import { type Resource, type SynthesizedStack, synthesizeStack } from './synth';

/** Lambda's limit for a function and all its layers, unzipped: 250 MiB. */
const LAMBDA_UNZIPPED_LIMIT_BYTES = 250 * 1024 * 1024;

let synth: SynthesizedStack;
/** The layer's content as staged for upload; at run time it is under /opt. */
let layerDir: string;
/** The browser bundle inside it: /opt/browser at run time. */
let bundleDir: string;

function assetDir(resource: Resource): string {
  const assetPath = resource.Metadata?.['aws:asset:path'];
  if (typeof assetPath !== 'string') throw new Error('resource has no asset metadata');
  return path.join(synth.outdir, assetPath);
}

function sizeOf(dir: string): number {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .reduce((total, entry) => total + statSync(path.join(entry.parentPath, entry.name)).size, 0);
}

// Bundling every function and copying the layer takes minutes on a busy 2-core machine, as in stack.test.ts.
beforeAll(() => {
  synth = synthesizeStack();
  const layer = synth.stack.node.findChild('Chromium').node.findChild('Layer');
  layerDir = assetDir(synth.resources[synth.logicalId(layer)] as Resource);
  bundleDir = path.join(layerDir, LAYER_BUNDLE_PATH);
}, 300_000);

afterAll(() => synth?.cleanup());

describe('the Chromium layer', () => {
  it('puts the browser bundle where the functions look for it', () => {
    expect(path.join('/opt', LAYER_BUNDLE_PATH)).toBe(LAYER_BUNDLE_DIR);
    // browserBundle() takes the layer's bundle when its manifest is there.
    expect(statSync(path.join(bundleDir, BUNDLE_MANIFEST)).isFile()).toBe(true);
  });

  it('carries Chromium packed, and inflates it into a runnable copy identical to the local one', async () => {
    const layout = bundleLayout(bundleDir);
    expect(isPacked(layout)).toBe(true);
    const tempRoot = mkdtempSync(path.join(tmpdir(), 'unpacked-'));
    try {
      const executable = await unpackedChromium(layout, tempRoot);
      accessSync(executable, constants.X_OK);
      expect(
        readFileSync(executable).equals(readFileSync(bundleLayout(localBundleDir()).executablePath)),
      ).toBe(true);
      // The SwiftShader libraries are beside it, where Chromium looks for them.
      expect(statSync(path.join(path.dirname(executable), 'libGLESv2.so')).isFile()).toBe(true);
    } finally {
      rmSync(tempRoot, { recursive: true, force: true });
    }
  });

  it('carries the SwiftShader and Amazon Linux libraries ready to use', () => {
    const layout = bundleLayout(bundleDir);
    for (const library of ['libEGL.so', 'libGLESv2.so', 'libvk_swiftshader.so', 'libvulkan.so.1']) {
      expect(statSync(path.join(path.dirname(layout.executablePath), library)).isFile()).toBe(true);
    }
    expect(statSync(path.join(layout.libraryDir, 'libnss3.so')).isFile()).toBe(true);
  });

  // The binary itself is compared with the local one above, once inflated.
  it('names the installed @sparticuz/chromium release in both bundles', () => {
    const manifestOf = (dir: string) =>
      JSON.parse(readFileSync(path.join(dir, BUNDLE_MANIFEST), 'utf8')) as BundleManifest;
    const installed = JSON.parse(
      readFileSync(path.join(PROJECT_ROOT, 'node_modules', '@sparticuz', 'chromium', 'package.json'), 'utf8'),
    ) as { version: string };
    expect(manifestOf(bundleDir).chromium).toBe(installed.version);
    expect(manifestOf(localBundleDir()).chromium).toBe(installed.version);
  });

  it("names the bundled Chromium's major version in the desktop user agent", () => {
    const major = JSON.parse(readFileSync(path.join(bundleDir, BUNDLE_MANIFEST), 'utf8')).chromium.split(
      '.',
    )[0];
    expect(DEVICE_PRESETS.desktop.userAgent).toContain(`Chrome/${major}.0.0.0 `);
  });

  it('carries the font set and fonts/fonts.conf, the very files a local run uses', () => {
    const fontsDir = path.dirname(bundleLayout(bundleDir).fontConfigFile);
    const localFonts = path.dirname(bundleLayout(localBundleDir()).fontConfigFile);
    const expected = [...FONT_SET.map((font) => path.basename(font.path)), 'fonts.conf'].sort();
    expect(readdirSync(fontsDir).sort()).toEqual(expected);
    for (const name of expected) {
      expect(
        readFileSync(path.join(fontsDir, name)).equals(readFileSync(path.join(localFonts, name))),
        name,
      ).toBe(true);
    }
    expect(readFileSync(path.join(fontsDir, 'fonts.conf'), 'utf8')).toBe(
      readFileSync(path.join(PROJECT_ROOT, 'fonts', 'fonts.conf'), 'utf8'),
    );
  });

  it("names no font folder but the font set's own in its fontconfig file", () => {
    const conf = readFileSync(bundleLayout(bundleDir).fontConfigFile, 'utf8');
    expect([...conf.matchAll(/<dir\b[^>]*>[^<]*<\/dir>/g)].map((match) => match[0])).toEqual([
      '<dir prefix="relative">.</dir>',
    ]);
    expect(conf).not.toMatch(/<include\b/);
  });

  it('carries Noto Color Emoji without its SVG pictures (Chromium draws the COLRv1 ones)', () => {
    const emoji = FONT_SET.find((font) => font.family === 'Noto Color Emoji');
    const file = readFileSync(
      path.join(path.dirname(bundleLayout(bundleDir).fontConfigFile), path.basename(emoji?.path ?? '')),
    );
    expect(tableTags(file)).toContain('COLR');
    expect(tableTags(file)).not.toContain('SVG ');
  });

  it('leaves out the brotli-packed browser', () => {
    const packed = readdirSync(layerDir, { recursive: true }).filter((name) => String(name).endsWith('.br'));
    expect(packed).toEqual([]);
  });

  it("fits with each renderer function (shared and headroom) within Lambda's 250 MiB unzipped, 50 MiB to spare", () => {
    for (const renderer of [synth.stack.renderer, synth.stack.headroomRenderer]) {
      const fn = synth.resources[synth.logicalId(renderer.fn)] as Resource;
      expect(fn.Properties.Layers).toHaveLength(1);
      const total = sizeOf(layerDir) + sizeOf(assetDir(fn));
      expect(total).toBeLessThanOrEqual(LAMBDA_UNZIPPED_LIMIT_BYTES - 50 * 1024 * 1024);
    }
  });
});
