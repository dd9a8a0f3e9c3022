/**
 * A/B of a renderer change, in one process and one run: the renderer at a git revision (--rev, default HEAD)
 * against the working tree's (or another revision's, --after), both behind the real handler, the same store and
 * their own egress proxy, interleaved with the floor as a control, each sample timed to the end of the streamed answer
 * as the "ours" rows of run.ts are. Used to justify each optimisation with a
 * before/after row (docs/performance.md). Only the renderer and its launch flags differ; everything else they import
 * is the working tree's.
 *
 *   npx tsx --no-cache bench/ab.ts [--rev=HEAD~1] [--after=HEAD|file:/tmp/variant.ts] [--also=...] [--runs=40] [--body='{"device":"mobile"}']
 */
import './env';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { ChromiumRendererOptions } from '../shared/capture/chromiumRenderer';
import { chromiumExecutable } from '../shared/capture/packedChromium';
import type { Renderer } from '../shared/capture/renderer';
import { readServiceConfig } from '../shared/config';
import { egressChromiumArgs, startEgressProxy } from '../shared/egress/egressProxy';
import { createUrlPolicy } from '../shared/egress/urlPolicy';
import { screenshotLambda } from '../shared/wiring/lambdaHandlers';
import { screenshotUseCase } from '../shared/wiring/screenshot';
import { createStores } from '../shared/wiring/stores';
import { startFloor } from './alternatives';
import { answeredMs, invokeStreaming, screenshotEvent } from './invoke';
import { startBenchPages } from './pages';
import { type Contender, interleave } from './sampler';
import { startBenchStore } from './service';
import { round, seededRandom, summarize } from './stats';

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const rev = arg('rev') ?? 'HEAD';
const after = arg('after');
/** More than two: --also=<rev or file:path>,... are measured as further variants. */
const also = arg('also')?.split(',') ?? [];
const runs = Number(arg('runs') ?? 40);
const extraBody = JSON.parse(arg('body') ?? '{}') as Record<string, unknown>;

const root = fileURLToPath(new URL('..', import.meta.url));
type RendererClass = new (options: ChromiumRendererOptions) => Renderer;

/** The capture files taken from the revision; everything else they import is the working tree's. */
const CAPTURE_FILES = ['chromiumRenderer.ts', 'chromiumLaunch.ts'];

/**
 * The renderer and its launch flags at `revision` (or the renderer in the file named `file:<path>`, for a variant
 * not committed, with the working tree's flags), their other relative imports pointed back at the working tree.
 */
async function rendererAt(revision: string, slot: string): Promise<RendererClass> {
  const dir = fileURLToPath(new URL(`../node_modules/.cache/screenshot-bench/ab/${slot}/`, import.meta.url));
  await mkdir(dir, { recursive: true });
  const fromFile = revision.startsWith('file:');
  for (const name of CAPTURE_FILES) {
    const original =
      fromFile && name === 'chromiumRenderer.ts'
        ? await readFile(revision.slice('file:'.length), 'utf8')
        : execFileSync('git', ['show', `${fromFile ? 'HEAD' : revision}:shared/capture/${name}`], {
            cwd: root,
            encoding: 'utf8',
          });
    const source = original
      .replace(/from '\.\/([^']+)'/g, (whole, module: string) =>
        CAPTURE_FILES.includes(`${module}.ts`) ? whole : `from '${root}shared/capture/${module}'`,
      )
      .replace(/from '\.\.\/([^']+)'/g, `from '${root}shared/$1'`);
    await writeFile(`${dir}${name}`, source);
  }
  const file = `${dir}chromiumRenderer.ts`;
  return ((await import(file)) as { ChromiumRenderer: RendererClass }).ChromiumRenderer;
}

const pages = await startBenchPages();
const store = await startBenchStore(pages.server.hostPort);
const env = { ...process.env, ...store.env };
const config = readServiceConfig(env);
const policy = { allowPrivateHosts: config.allowPrivateHosts };
const { ChromiumRenderer } = await import('../shared/capture/chromiumRenderer');
const variants: [string, RendererClass][] = [
  [`before (${rev})`, await rendererAt(rev, 'before')],
  after ? [`after (${after})`, await rendererAt(after, 'after')] : ['after (working tree)', ChromiumRenderer],
];
for (const [i, variant] of also.entries())
  variants.push([`also (${variant})`, await rendererAt(variant, `also-${i}`)]);
const body = { url: pages.simple, ...extraBody };
const closers: (() => Promise<void>)[] = [];
const contenders: Contender[] = [];
for (const [key, Renderer] of variants) {
  const egress = await startEgressProxy(policy);
  // As deployed: each capture's context has a route of its own (a revision from before routes ignores it).
  const renderer = new Renderer({
    env,
    launchArgs: async () => egressChromiumArgs(egress.url),
    contextProxy: () => egress.openRoute(),
  });
  await renderer.warmUp();
  const handler = screenshotLambda(
    screenshotUseCase(
      createStores(store.dynamo.client, config),
      renderer,
      createUrlPolicy(policy),
      store.env,
    ),
  );
  closers.push(
    () => renderer.close(),
    () => egress.close(),
  );
  contenders.push({
    key,
    runs,
    warmUp: 5,
    shoot: async () => answeredMs(await invokeStreaming(handler, screenshotEvent(store.apiKey, body)), key),
  });
}
const floor = await startFloor(await chromiumExecutable());
closers.push(() => floor.close());
contenders.push({ key: 'floor (control)', runs, warmUp: 5, shoot: () => floor.shoot(pages.simple) });

const samples = await interleave(contenders, seededRandom(1));
console.log(`body ${JSON.stringify(extraBody)}`);
// The lower quartile too: on a busy shared machine it moves less with other people's load than the median does.
for (const c of contenders) {
  const values = [...(samples.get(c.key) ?? [])].sort((a, b) => a - b);
  const q1 = round(values[Math.floor((values.length - 1) / 4)] ?? Number.NaN);
  console.log(`${c.key.padEnd(24)} ${JSON.stringify({ q1, ...summarize(values) })}`);
}
for (const close of closers) await close();
await store.close();
await pages.close();
