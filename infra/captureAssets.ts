import type { ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';

/**
 * The image encoder behind AVIF: native code (libvips), which a bundle cannot hold, so it stays outside the bundle,
 * loaded on the first AVIF. Its 20 MB do not fit beside the Chromium layer within Lambda's 250 MiB (the two take
 * about 257 MB today), so the screenshot function does not carry it yet: it belongs to the front once Chromium runs
 * in a function of its own (docs/deploy.md, "AVIF").
 */
export const SHARP_PACKAGE = 'sharp';

/**
 * Files the screenshot function reads at run time beside its bundle, copied there after bundling: the compiled ad
 * and tracker filter engine (read from `filters/` next to the bundle, as next to shared/capture/adBlocking.ts), and
 * autoconsent's content script and rules, found the way Node finds the package (node_modules/, from the bundle).
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
  ],
};
