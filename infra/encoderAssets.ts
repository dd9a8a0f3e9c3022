import { fileURLToPath } from 'node:url';
import { runtimeClosure } from './chromiumLayer';

/**
 * The image encoder behind AVIF (shared/capture/avifEncoding.ts): native code (libvips, about 20 MB), which a
 * bundle cannot hold. The renderer functions, which encode it, keep it outside their bundle and carry the installed
 * package and its runtime dependencies (the prebuilt linux-x64 binaries among them) under node_modules beside it.
 * No front carries it: none runs native code on a renderer's bytes.
 */
export const SHARP_PACKAGE = 'sharp';

/**
 * The commands that copy the encoder's packages into a function after bundling, each at its place under
 * node_modules/. The closure is read from this machine's node_modules; the commands name the packages under the
 * bundling input, as CDK hands hooks the paths of its bundling environment.
 */
export function encoderAssetCommands(inputDir: string, outputDir: string): string[] {
  return runtimeClosure(SHARP_PACKAGE, fileURLToPath(new URL('..', import.meta.url))).map(
    ({ relativeDir }) =>
      `mkdir -p "${outputDir}/node_modules/${relativeDir}" && cp -rL "${inputDir}/node_modules/${relativeDir}/." "${outputDir}/node_modules/${relativeDir}"`,
  );
}
