import type { ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';

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
