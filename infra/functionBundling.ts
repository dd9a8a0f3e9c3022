import {
  type BundlingOptions,
  type ICommandHooks,
  LogLevel,
  OutputFormat,
} from 'aws-cdk-lib/aws-lambda-nodejs';

/**
 * The most a function's package and layers may weigh unzipped: 50 MiB under Lambda's 250 MiB, room for the next
 * Chromium and more fonts in the renderer. The stack test measures every function against it.
 */
export const FUNCTION_SIZE_BUDGET_MIB = 200;

/**
 * How every function is bundled: one minified ES module, the AWS SDK included (the exact version the tests ran, not
 * the runtime's copy). Source maps ship only when the environment opts in (`sourceMaps`): they would add megabytes
 * to every package, and the renderer's package must leave room for the next Chromium.
 */
export function functionBundling(
  sourceMaps: boolean,
  options: { externalModules?: string[]; commandHooks?: ICommandHooks } = {},
): BundlingOptions {
  return {
    format: OutputFormat.ESM,
    target: 'node22',
    mainFields: ['module', 'main'],
    minify: true,
    sourceMap: sourceMaps,
    ...(sourceMaps ? { sourcesContent: false } : {}),
    logLevel: LogLevel.WARNING,
    // Bundled CommonJS dependencies call require(); ESM output has none unless the banner provides it.
    banner:
      "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    externalModules: options.externalModules ?? [],
    ...(options.commandHooks ? { commandHooks: options.commandHooks } : {}),
  };
}

/** With source maps shipped, stack traces point at the TypeScript sources instead of the minified bundle. */
export function sourceMapEnvironment(sourceMaps: boolean): Record<string, string> {
  return sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {};
}
