import { type BundlingOptions, LogLevel, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';

/** How every function is bundled: ESM for node22, minified, with source maps for readable stack traces. */
export const ESM_BUNDLING = {
  format: OutputFormat.ESM,
  target: 'node22',
  mainFields: ['module', 'main'],
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  logLevel: LogLevel.WARNING,
  // Bundled CommonJS dependencies call require(); ESM output has none unless the banner provides it.
  banner:
    "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
} satisfies BundlingOptions;
