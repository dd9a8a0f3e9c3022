import type { ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';
import { CONTENT_LIBRARY_FILES } from '../shared/capture/pageContent';
import { encoderAssetCommands } from './encoderAssets';

/**
 * Files the renderer functions read at run time beside their bundle, copied there after bundling: the compiled ad
 * and tracker filter engine (read from `filters/` next to the bundle, as next to shared/capture/adBlocking.ts), and
 * autoconsent's content script and rules, and the Readability and Turndown builds of content captures, found the way
 * Node finds a package (node_modules/, from the bundle); and the AVIF encoder (encoderAssets.ts).
 */
const AUTOCONSENT = 'node_modules/@duckduckgo/autoconsent';
const AUTOCONSENT_FILES = [
  'package.json',
  'dist/autoconsent.cjs.js',
  'dist/autoconsent.playwright.js',
  'rules/compact-rules.json',
];

/** Package files the renderer reads at run time, each at its own path under node_modules/. */
const PACKAGE_FILES = [
  ...AUTOCONSENT_FILES.map((file) => `${AUTOCONSENT}/${file}`),
  ...CONTENT_LIBRARY_FILES.map((file) => `node_modules/${file}`),
];

export const captureAssetHooks: ICommandHooks = {
  beforeBundling: () => [],
  beforeInstall: () => [],
  afterBundling: (inputDir, outputDir) => [
    `cp -r "${inputDir}/shared/capture/filters" "${outputDir}/filters"`,
    ...PACKAGE_FILES.map(
      (file) =>
        `mkdir -p "$(dirname "${outputDir}/${file}")" && cp "${inputDir}/${file}" "${outputDir}/${file}"`,
    ),
    ...encoderAssetCommands(inputDir, outputDir),
  ],
};
