import { spawn } from 'node:child_process';
import { cpSync, existsSync, renameSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { BrowserBundle } from '../shared/capture/browserBundle';
import { PACKED_CHROMIUM_DIR, PACKING, packChromium } from '../shared/capture/packedChromium';

const ENTRY = fileURLToPath(new URL('./coldStartChild.ts', import.meta.url));
/** Inside node_modules so that the external @sparticuz/chromium resolves as it does from the deployed bundle. */
const BUNDLE = fileURLToPath(
  new URL('../node_modules/.cache/screenshot-bench/coldStart.mjs', import.meta.url),
);

export interface ColdStartSample {
  /** Spawn to image in hand, measured by the parent. */
  totalMs: number;
  /** Inside the child: process start to the bundle loaded, and to the image. */
  loadedMs: number;
  imageMs: number;
}

/**
 * The layer's stand-in: the local bundle laid out as infra/chromiumLayer.ts lays it out in the layer, Chromium
 * packed in parts. Built once per bundle version and packing (packing takes seconds), kept beside the bench bundle.
 */
export function packedLayerStandIn(local: BrowserBundle): string {
  const dir = fileURLToPath(
    new URL(
      `../node_modules/.cache/screenshot-bench/layer-${basename(local.dir)}-${PACKING}`,
      import.meta.url,
    ),
  );
  if (existsSync(dir)) return dir;
  const staging = `${dir}.${process.pid}`;
  cpSync(local.dir, staging, { recursive: true, filter: (source) => source !== local.executablePath });
  packChromium(local.executablePath, join(staging, PACKED_CHROMIUM_DIR));
  renameSync(staging, dir);
  return dir;
}

/** Bundles the child the way infra/stack.ts bundles the renderer function (ESM, minified, Chromium external). */
export async function bundleColdStart(): Promise<void> {
  await build({
    entryPoints: [ENTRY],
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    mainFields: ['module', 'main'],
    minify: true,
    external: ['@sparticuz/chromium'],
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    logLevel: 'error',
  });
}

/**
 * Spawns a new node process that builds the service and captures once. The time is taken when the image arrives;
 * the promise settles once the child has exited, so the next sample starts on a quiet machine.
 */
export function coldStartOnce(env: Record<string, string>): Promise<ColdStartSample> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(process.execPath, [BUNDLE], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let sample: ColdStartSample | undefined;
    let failure: Error | undefined;
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (sample || failure || !line.startsWith('{')) return;
      const totalMs = Number(process.hrtime.bigint() - start) / 1e6;
      const report = JSON.parse(line) as { status: number; loadedMs: number; imageMs: number };
      if (report.status !== 200) failure = new Error(`cold start answered ${report.status}`);
      else sample = { totalMs, loadedMs: report.loadedMs, imageMs: report.imageMs };
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (sample) resolve(sample);
      else reject(failure ?? new Error(`cold start child exited with ${code} before an image`));
    });
  });
}
