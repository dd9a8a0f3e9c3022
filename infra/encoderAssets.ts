import { fileURLToPath } from 'node:url';
import type { ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';
import { runtimeClosure } from './chromiumLayer';

/**
 * The image encoder behind AVIF (shared/screenshot/avifEncoding.ts): native code (libvips, about 20 MB), which a
 * bundle cannot hold. The fronts that capture keep it outside their bundle and carry the installed package and its
 * runtime dependencies (the prebuilt linux-x64 binaries among them) under node_modules beside it; the renderer,
 * which only returns the PNG, does not.
 */
export const SHARP_PACKAGE = 'sharp';

/** Copies the encoder's packages into the function after bundling, each at its place under node_modules/. */
export const encoderAssetHooks: ICommandHooks = {
  beforeBundling: () => [],
  beforeInstall: () => [],
  // The closure is read from this machine's node_modules; the commands name the packages under the bundling input,
  // as CDK hands hooks the paths of its bundling environment.
  afterBundling: (inputDir, outputDir) =>
    runtimeClosure(SHARP_PACKAGE, fileURLToPath(new URL('..', import.meta.url))).map(
      ({ relativeDir }) =>
        `mkdir -p "${outputDir}/node_modules/${relativeDir}" && cp -rL "${inputDir}/node_modules/${relativeDir}/." "${outputDir}/node_modules/${relativeDir}"`,
    ),
};
