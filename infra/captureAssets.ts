import type { ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';
import { runtimeClosure } from './chromiumLayer';

/**
 * The image encoder behind AVIF: native code (libvips), which a bundle cannot hold, so the function carries the
 * installed package and its runtime dependencies (the prebuilt linux-x64 binaries among them) under node_modules.
 */
export const SHARP_PACKAGE = 'sharp';

/**
 * Files the screenshot function reads at run time beside its bundle, copied there after bundling: the compiled ad
 * and tracker filter engine (read from `filters/` next to the bundle, as next to shared/capture/adBlocking.ts), and
 * autoconsent's content script and rules, found the way Node finds the package (node_modules/, from the bundle), and
 * the image encoder's installed packages.
 */
const AUTOCONSENT = 'node_modules/@duckduckgo/autoconsent';
const AUTOCONSENT_FILES = [
  'package.json',
  'dist/autoconsent.cjs.js',
  'dist/autoconsent.playwright.js',
  'rules/compact-rules.json',
];

export const captureAssetHooks: ICommandHooks = {
  beforeBundling: () => [],
  beforeInstall: () => [],
  afterBundling: (inputDir, outputDir) => [
    `cp -r "${inputDir}/shared/capture/filters" "${outputDir}/filters"`,
    ...AUTOCONSENT_FILES.map(
      (file) =>
        `mkdir -p "$(dirname "${outputDir}/${AUTOCONSENT}/${file}")" && cp "${inputDir}/${AUTOCONSENT}/${file}" "${outputDir}/${AUTOCONSENT}/${file}"`,
    ),
    ...runtimeClosure(SHARP_PACKAGE, inputDir).map(
      (pkg) =>
        `mkdir -p "${outputDir}/node_modules/${pkg.relativeDir}" && cp -rL "${pkg.dir}/." "${outputDir}/node_modules/${pkg.relativeDir}"`,
    ),
  ],
};
