import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync } from 'node:zlib';
import { FONT_SET, type FontFile } from '../../fonts/fontSet';
import { withoutTables } from './openTypeTables';
import { extractTar } from './tarArchive';

/**
 * Chromium ready to run, with everything it reads at run time: the same tree in the Lambda layer and, locally, in
 * node_modules/.cache. Nothing in it is packed, so starting the browser is only starting it.
 */
export interface BrowserBundle {
  dir: string;
  /** The browser, with the SwiftShader libraries (WebGL) beside it, where Chromium looks for them. */
  executablePath: string;
  /** The font set and the one fontconfig file naming it (fonts/fonts.conf); no font of the host is used. */
  fontConfigFile: string;
  /** NSS and expat, which Amazon Linux 2023 lacks; used everywhere, so that the same libraries run everywhere. */
  libraryDir: string;
}

/** Layers are extracted under /opt; the layer (infra/chromiumLayer.ts) puts the bundle here. */
export const LAYER_BUNDLE_DIR = '/opt/browser';
/** Written last, so a folder that has it is complete. Lists what went in. */
export const BUNDLE_MANIFEST = 'bundle.json';
const CHROMIUM_PACKAGE = '@sparticuz/chromium';
/** Changes whenever the layout or the way it is built does, so older local bundles are not reused. */
const LAYOUT_VERSION = 1;

export interface BundleManifest {
  key: string;
  chromium: string;
  fonts: { file: string; family: string; package: string; version: string }[];
}

export function bundleLayout(dir: string): BrowserBundle {
  return {
    dir,
    executablePath: join(dir, 'chromium', 'chromium'),
    fontConfigFile: join(dir, 'fonts', 'fonts.conf'),
    libraryDir: join(dir, 'lib'),
  };
}

/**
 * The bundle this process runs: BROWSER_BUNDLE_DIR if set (the benchmark's stand-in for the layer); deployed, the
 * layer's; otherwise the local one, unpacked from the installed packages at first use (once per install, ~2 s).
 */
export function browserBundle(env: NodeJS.ProcessEnv = process.env): BrowserBundle {
  if (env.BROWSER_BUNDLE_DIR) return bundleLayout(env.BROWSER_BUNDLE_DIR);
  if (existsSync(join(LAYER_BUNDLE_DIR, BUNDLE_MANIFEST))) return bundleLayout(LAYER_BUNDLE_DIR);
  return bundleLayout(localBundleDir());
}

/** What a bundle is built from: the installed @sparticuz/chromium and font packages, and fonts/fonts.conf. */
interface BundleSources {
  nodeModules: string;
  chromiumBin: string;
  fontsConf: string;
  manifest: BundleManifest;
}

function bundleSources(): BundleSources {
  const chromiumDir = packageRoot(createRequire(import.meta.url).resolve(CHROMIUM_PACKAGE));
  const nodeModules = dirname(dirname(chromiumDir));
  const versionOf = (packageDir: string) =>
    (JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string }).version;
  const fontsConf = fileURLToPath(new URL('../../fonts/fonts.conf', import.meta.url));
  const fonts = FONT_SET.map((font) => ({
    file: basename(font.path),
    family: font.family,
    package: font.package,
    version: versionOf(join(nodeModules, font.package)),
  }));
  const chromium = versionOf(chromiumDir);
  const key = createHash('sha256')
    .update(JSON.stringify({ LAYOUT_VERSION, chromium, fonts, FONT_SET }))
    .update(readFileSync(fontsConf))
    .digest('hex')
    .slice(0, 16);
  return {
    nodeModules,
    chromiumBin: join(chromiumDir, 'bin'),
    fontsConf,
    manifest: { key, chromium, fonts },
  };
}

/**
 * The folder holding the package's package.json, whichever node_modules Node found it in. The entry file's depth
 * inside the package changes between releases (build/cjs/index.cjs, then build/index.js), and the package exports
 * no package.json, so the root is found by walking up to its folder under node_modules.
 */
function packageRoot(entryFile: string): string {
  for (let dir = dirname(entryFile); dir !== dirname(dir); dir = dirname(dir)) {
    if (dir.endsWith(join('node_modules', CHROMIUM_PACKAGE))) return dir;
  }
  throw new Error(`${CHROMIUM_PACKAGE} is not installed under a node_modules folder`);
}

/** The local bundle's folder, built first if this install has none yet. Returns its path. */
export function localBundleDir(): string {
  const sources = bundleSources();
  const parent = join(sources.nodeModules, '.cache', 'screenshot-browser');
  const dir = join(parent, sources.manifest.key);
  if (existsSync(join(dir, BUNDLE_MANIFEST))) return dir;

  // Built aside and renamed into place: test workers may get here at once, and a half-written bundle must never
  // be found. The first rename wins; the others throw theirs away.
  const staging = `${dir}.${process.pid}.${Date.now()}`;
  try {
    writeBrowserBundle(staging, sources);
    renameSync(staging, dir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(join(dir, BUNDLE_MANIFEST))) throw error;
  }
  // Bundles of earlier versions are ~230 MB each.
  for (const name of readdirSync(parent)) {
    if (!name.startsWith(sources.manifest.key)) rmSync(join(parent, name), { recursive: true, force: true });
  }
  return dir;
}

/**
 * Writes a complete bundle into `dir` (which must not exist): Chromium and the SwiftShader libraries unpacked from
 * @sparticuz/chromium's brotli files, its Amazon Linux libraries, and the font set with fonts.conf.
 */
function writeBrowserBundle(dir: string, sources: BundleSources): void {
  const { executablePath, fontConfigFile } = bundleLayout(dir);
  const unpacked = (name: string) => brotliDecompressSync(readFileSync(join(sources.chromiumBin, name)));
  mkdirSync(dirname(executablePath), { recursive: true });
  writeFileSync(executablePath, unpacked('chromium.br'), { mode: 0o755 });
  extractTar(unpacked('swiftshader.tar.br'), dirname(executablePath));
  extractTar(unpacked('al2023.tar.br'), dir); // lib/

  const fontsDir = dirname(fontConfigFile);
  mkdirSync(fontsDir);
  for (const font of FONT_SET) writeFileSync(join(fontsDir, basename(font.path)), fontData(font, sources));
  writeFileSync(fontConfigFile, readFileSync(sources.fontsConf));
  writeFileSync(join(dir, BUNDLE_MANIFEST), `${JSON.stringify(sources.manifest, null, 2)}\n`);
}

function fontData(font: FontFile, sources: BundleSources): Buffer {
  const data = readFileSync(join(sources.nodeModules, font.package, font.path));
  return font.dropTables ? withoutTables(data, font.dropTables) : data;
}
