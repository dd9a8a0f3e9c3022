import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { AssetHashType, DockerImage } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import {
  BUNDLE_MANIFEST,
  type BundleManifest,
  bundleLayout,
  LAYER_BUNDLE_DIR,
  localBundleDir,
} from '../shared/capture/browserBundle';
import { PACKED_CHROMIUM_DIR, PACKING, packChromium } from '../shared/capture/packedChromium';

export const CHROMIUM_PACKAGE = '@sparticuz/chromium';

interface PackageJson {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

export interface InstalledPackage {
  name: string;
  version: string;
  /** Absolute directory of the installed package. */
  dir: string;
  /** Its path below the project's node_modules, so nested installs keep their place in the layer. */
  relativeDir: string;
}

/**
 * A package and its runtime dependency closure as installed under `projectRoot/node_modules`, found with Node's own
 * lookup (nearest `node_modules` upwards). Optional dependencies are taken when installed and skipped when not;
 * a missing required dependency is an error, because the layer would fail at the first import in Lambda.
 */
export function runtimeClosure(packageName: string, projectRoot: string): InstalledPackage[] {
  const nodeModules = path.join(projectRoot, 'node_modules');
  const found = new Map<string, InstalledPackage>();

  const visit = (name: string, fromDir: string, optional: boolean): void => {
    const dir = locate(name, fromDir, projectRoot);
    if (!dir) {
      if (optional) return;
      throw new Error(
        `${name} (needed by the Chromium layer) is not installed under ${nodeModules}; run npm ci`,
      );
    }
    if (found.has(dir)) return;
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as PackageJson;
    found.set(dir, {
      name: pkg.name,
      version: pkg.version,
      dir,
      relativeDir: path.relative(nodeModules, dir),
    });
    for (const dep of Object.keys(pkg.dependencies ?? {})) visit(dep, dir, false);
    for (const dep of Object.keys(pkg.optionalDependencies ?? {})) visit(dep, dir, true);
  };

  visit(packageName, projectRoot, false);
  return [...found.values()].sort((a, b) => a.relativeDir.localeCompare(b.relativeDir));
}

function locate(name: string, fromDir: string, projectRoot: string): string | undefined {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === projectRoot || path.dirname(dir) === dir) return undefined;
  }
}

export interface ChromiumLayerProps {
  /** Directory holding package.json and the installed node_modules. */
  projectRoot: string;
  runtime: lambda.Runtime;
  architecture: lambda.Architecture;
}

/**
 * Packages of the Bare JavaScript runtime (7 MB with their prebuilt binaries). tar-fs and tar-stream, below
 * @sparticuz/chromium, pick them through `imports` conditions that apply under Bare only; Node never loads them.
 */
export const BARE_RUNTIME_ONLY = /^bare-/;

/** Layers are extracted under /opt, so this is where the bundle goes inside the layer's zip. */
export const LAYER_BUNDLE_PATH = path.relative('/opt', LAYER_BUNDLE_DIR);

/**
 * The browser bundle (shared/capture/browserBundle.ts: Chromium unpacked, its libraries, the font set and
 * fonts/fonts.conf) at /opt/browser, plus `@sparticuz/chromium`'s JS (our launch flags start from its `args`) and
 * its runtime dependencies under nodejs/node_modules. Built on this machine from the local bundle, which is built from
 * the installed npm packages: no Docker, no download. Chromium itself is zstd-packed in parts
 * (shared/capture/packedChromium.ts), which a new sandbox inflates in parallel into /tmp at its first launch: unpacked
 * it would not fit the renderer's 200 MiB budget. Everything else (fonts, libraries) is ready to use; the brotli
 * files are left out. The function marks the package external, so Node resolves it from /opt/nodejs/node_modules.
 */
export class ChromiumLayer extends Construct {
  readonly layer: lambda.LayerVersion;
  readonly packages: readonly InstalledPackage[];
  /** What the bundle in the layer holds. */
  readonly bundle: BundleManifest;

  constructor(scope: Construct, id: string, props: ChromiumLayerProps) {
    super(scope, id);
    const packages = runtimeClosure(CHROMIUM_PACKAGE, props.projectRoot).filter(
      (pkg) => !BARE_RUNTIME_ONLY.test(pkg.name),
    );
    const chromium = packages.find((p) => p.name === CHROMIUM_PACKAGE);
    if (!chromium) throw new Error(`${CHROMIUM_PACKAGE} is not installed`);
    this.packages = packages;
    const bundleDir = localBundleDir();
    this.bundle = JSON.parse(readFileSync(path.join(bundleDir, BUNDLE_MANIFEST), 'utf8')) as BundleManifest;

    // The installed versions and the bundle's key (Chromium, fonts, fonts.conf) decide the content, so they are the
    // hash: an unchanged layer is not re-uploaded, and a repeated synth reuses the staged copy.
    const assetHash = createHash('sha256')
      .update(
        ['layer-v3', PACKING, this.bundle.key, ...packages.map((p) => `${p.relativeDir}@${p.version}`)].join(
          '\n',
        ),
      )
      .digest('hex');
    const packedBrowser = path.join(chromium.dir, 'bin');

    this.layer = new lambda.LayerVersion(this, 'Layer', {
      description: `${CHROMIUM_PACKAGE} ${chromium.version} zstd-packed, with ${this.bundle.fonts.length} font files`,
      compatibleRuntimes: [props.runtime],
      compatibleArchitectures: [props.architecture],
      code: lambda.Code.fromAsset(bundleDir, {
        assetHashType: AssetHashType.CUSTOM,
        assetHash,
        bundling: {
          // Required by the API but never pulled: local bundling below always succeeds or throws.
          image: DockerImage.fromRegistry('public.ecr.aws/lambda/nodejs:22'),
          local: {
            tryBundle(outputDir: string): boolean {
              const layerBundle = path.join(outputDir, LAYER_BUNDLE_PATH);
              const { executablePath } = bundleLayout(bundleDir);
              cpSync(bundleDir, layerBundle, {
                recursive: true,
                filter: (source) => source !== executablePath,
              });
              packChromium(executablePath, path.join(layerBundle, PACKED_CHROMIUM_DIR));
              for (const pkg of packages) {
                // Each package is copied without its own node_modules; nested dependencies are in `packages` too.
                const skipNested = path.join(pkg.dir, 'node_modules');
                cpSync(pkg.dir, path.join(outputDir, 'nodejs', 'node_modules', pkg.relativeDir), {
                  recursive: true,
                  dereference: true,
                  filter: (source) => source !== skipNested && source !== packedBrowser,
                });
              }
              return true;
            },
          },
        },
      }),
    });
  }
}
