/**
 * `npm run bench`: the warm capture path against what users would pick instead, in one run on this machine with
 * one Chromium binary. Prints Markdown tables, writes bench/results/latest.json and checks the speed targets (bench/targets.ts)
 * against that JSON. Options: --quick (a quarter of the runs, for trying changes), --only=core,variants,cold,
 * admission,async,cache,memory (and `warm`: of core, only ours against the floor), --out=<file>.
 */
import './env';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { browserBundle } from '../shared/capture/browserBundle';
import { chromiumExecutable } from '../shared/capture/packedChromium';
import { egressChromiumArgs, startEgressProxy } from '../shared/egress/egressProxy';
import { captureWebsiteCapturer, launchPerRequest, ourLaunch, startFloor, usualLaunch } from './alternatives';
import { bundleColdStart, type ColdStartSample, coldStartOnce, packedLayerStandIn } from './coldStart';
import { answeredMs, expectImage } from './invoke';
import { describeMachine, finishMachine } from './machine';
import { collectGarbage, diskUsage, residentMemory } from './memory';
import { startBenchPages } from './pages';
import { differingPixels } from './pixels';
import { machineLine, markdownReport } from './report';
import { type BenchResults, type MemoryResult, SCENARIOS, type ScenarioKey } from './results';
import { type Contender, interleave, type Retries } from './sampler';
import { admissionOnly, BENCH_TABLE, startBenchJobs, startBenchStore, startOurService } from './service';
import { round, seededRandom, summarize } from './stats';
import { checkTargets, formatTargets } from './targets';

const PHASES = ['core', 'variants', 'cold', 'admission', 'async', 'cache', 'memory'] as const;
/** `warm` asks for the core phase's first two rows only (ours and the floor), to try a change of the warm path. */
type Phase = (typeof PHASES)[number] | 'warm';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',') as Phase[] | undefined;
const outFile =
  args.find((a) => a.startsWith('--out='))?.slice('--out='.length) ??
  fileURLToPath(new URL('./results/latest.json', import.meta.url));
const runs = (n: number) => (quick ? Math.max(3, Math.round(n / 4)) : n);
const phase = (name: Phase) => !only || only.includes(name);
const warmOnly = phase('warm') && !phase('core');
const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

const started = Date.now();
const random = seededRandom(8);
const pages = await startBenchPages();
const executablePath = await chromiumExecutable();
const store = await startBenchStore(pages.server.hostPort);
const ours = await startOurService(store);
const floor = await startFloor(executablePath);
const puppeteerCore = JSON.parse(
  await readFile(
    fileURLToPath(new URL('../node_modules/puppeteer-core/package.json', import.meta.url)),
    'utf8',
  ),
).version as string;
const results: BenchResults = {
  generatedAt: new Date().toISOString(),
  durationSeconds: 0,
  machine: describeMachine(floor.version, puppeteerCore),
  scenarios: {},
  targets: [],
};
const record = (key: ScenarioKey, samples: number[] | undefined) => {
  if (samples && samples.length > 0)
    results.scenarios[key] = { label: SCENARIOS[key], ...summarize(samples) };
};
const simple = { url: pages.simple };
const retries: Retries = new Map();

try {
  // Same page, same size: our image must be the floor's, pixel for pixel, or the comparison means nothing.
  const [ourImage, floorImage] = [
    expectImage(await ours.shoot(simple), 'ours'),
    await floor.shoot(pages.simple),
  ];
  results.pixelsMatchFloor = (await differingPixels(ourImage, floorImage)) === 0;
  log(`our image ${results.pixelsMatchFloor ? 'matches' : 'DIFFERS FROM'} the floor's, pixel for pixel`);

  if (phase('core') || warmOnly) {
    log(
      warmOnly
        ? 'warm: ours and the floor (interleaved)'
        : 'core: ours, floor, floor via proxy, capture-website (both launches), launch per request (interleaved)',
    );
    const warm: Contender[] = [
      {
        key: 'oursWarm',
        runs: runs(40),
        warmUp: 5,
        shoot: async () => answeredMs(await ours.shoot(simple), 'ours'),
      },
      { key: 'floor', runs: runs(40), warmUp: 5, shoot: () => floor.shoot(pages.simple) },
    ];
    if (warmOnly) {
      const samples = await interleave(warm, random, retries);
      for (const c of warm) record(c.key as ScenarioKey, samples.get(c.key));
    } else {
      const egress = await startEgressProxy({ allowPrivateHosts: pages.server.hostPort });
      const floorProxy = await startFloor(executablePath, egressChromiumArgs(egress.url));
      const cw = captureWebsiteCapturer(usualLaunch(executablePath));
      const cwOurFlags = captureWebsiteCapturer(ourLaunch(executablePath));
      const launch = launchPerRequest(usualLaunch(executablePath));
      const contenders: Contender[] = [
        ...warm,
        { key: 'floorProxy', runs: runs(20), warmUp: 3, shoot: () => floorProxy.shoot(pages.simple) },
        { key: 'launchPerRequest', runs: runs(20), warmUp: 2, shoot: () => launch.shoot(pages.simple) },
        { key: 'captureWebsite', runs: runs(20), warmUp: 1, shoot: () => cw.shoot(pages.simple) },
        {
          key: 'captureWebsiteOurFlags',
          runs: runs(15),
          warmUp: 1,
          shoot: () => cwOurFlags.shoot(pages.simple),
        },
      ];
      const samples = await interleave(contenders, random, retries);
      for (const c of contenders) record(c.key as ScenarioKey, samples.get(c.key));
      await floorProxy.close();
      await egress.close();
    }
  }

  if (phase('variants')) {
    log(
      'variants: text in every script, full page, 4K, jpeg, webp, avif, mobile, ad and banner blocking, lazy full page (interleaved)',
    );
    const variant = (key: ScenarioKey, body: Record<string, unknown>, n: number): Contender => ({
      key,
      runs: runs(n),
      warmUp: 2,
      shoot: async () => answeredMs(await ours.shoot(body), key),
    });
    const contenders = [
      variant('oursText', { url: pages.text }, 20),
      variant('oursFullPage', { url: pages.tall, fullPage: true }, 12),
      variant('ours4k', { ...simple, width: 3840, height: 2160 }, 15),
      variant('oursJpeg', { ...simple, format: 'jpeg', quality: 80 }, 20),
      variant('oursWebp', { ...simple, format: 'webp', quality: 80 }, 20),
      variant('oursAvif', { ...simple, format: 'avif', quality: 80 }, 20),
      variant('oursMobile', { ...simple, device: 'mobile' }, 20),
      // The switches' cost is measured against the same page without them, in the same interleaved run; twice the
      // samples of the other rows, as the target is a ratio of two medians on a shared machine.
      variant('oursPlain', simple, 40),
      variant('oursClean', { ...simple, blockAds: true, blockCookieBanners: true }, 40),
      variant('oursLazy', { url: pages.lazy, fullPage: true }, 12),
    ];
    const samples = await interleave(contenders, random, retries);
    for (const c of contenders) record(c.key as ScenarioKey, samples.get(c.key));
  }

  if (phase('cold')) {
    log('cold start of the renderer: bundling its entry as the stack does, then one new process per sample');
    await bundleColdStart();
    const env = {
      ...store.env,
      TABLE_NAME: BENCH_TABLE,
      BENCH_DYNAMO_ENDPOINT: store.dynamo.endpoint,
      BENCH_API_KEY: store.apiKey,
      BENCH_URL: pages.simple,
      // The layer's stand-in: the same tree as /opt/browser (Chromium packed), built from the same packages.
      BROWSER_BUNDLE_DIR: packedLayerStandIn(browserBundle()),
    };
    // A new Lambda sandbox starts with an empty /tmp: each such sample gets a temp folder of its own. The other row
    // keeps one temp folder for every sample, as a process restarted in the same sandbox would find it.
    const sandboxTemp = await mkdtemp(join(tmpdir(), 'screenshot-cold-'));
    const inEmptyTemp = async (extra: Record<string, string> = {}): Promise<ColdStartSample> => {
      const temp = await mkdtemp(join(tmpdir(), 'screenshot-cold-'));
      try {
        return await coldStartOnce({ ...env, ...extra, TMPDIR: temp });
      } finally {
        await rm(temp, { recursive: true, force: true });
      }
    };
    try {
      await coldStartOnce({ ...env, TMPDIR: sandboxTemp }); // warms the OS file cache for the bundle and the binary
      const empty: ColdStartSample[] = [];
      const kept: ColdStartSample[] = [];
      const unpacking: ColdStartSample[] = [];
      for (let i = 0; i < runs(8); i++) {
        empty.push(await inEmptyTemp());
        kept.push(await coldStartOnce({ ...env, TMPDIR: sandboxTemp }));
        // The local bundle, with nothing packed: only @sparticuz/chromium's own unpacking runs, as before the layer.
        unpacking.push(
          await inEmptyTemp({ BENCH_UNPACK_INTO_TEMP: '1', BROWSER_BUNDLE_DIR: browserBundle().dir }),
        );
      }
      record(
        'coldStartEmptyTemp',
        empty.map((s) => s.totalMs),
      );
      record(
        'coldStart',
        kept.map((s) => s.totalMs),
      );
      record(
        'coldStartUnpacking',
        unpacking.map((s) => s.totalMs),
      );
      results.coldStartBreakdown = {
        loadedMs: summarize(empty.map((s) => s.loadedMs)).median,
        imageMs: summarize(empty.map((s) => s.imageMs)).median,
      };
    } finally {
      await rm(sandboxTemp, { recursive: true, force: true });
    }
  }

  if (phase('admission')) {
    log('admission alone: the real handler with an instant renderer');
    const admission = admissionOnly(store);
    for (let i = 0; i < 20; i++) expectImage(await admission.shoot(simple), 'admission');
    const samples: number[] = [];
    for (let i = 0; i < runs(200); i++) {
      samples.push(answeredMs(await admission.shoot(simple), 'admission'));
    }
    record('admission', samples);
  }

  if (phase('async')) {
    log(
      'async: accepting a capture (against admission alone, interleaved; the worker waits), then a batch of 100 through the queue',
    );
    const jobs = await startBenchJobs(store);
    try {
      const admission = admissionOnly(store);
      const acceptedIds: string[] = [];
      const accepted = (response: Awaited<ReturnType<typeof jobs.accept>>) => {
        if (response.status !== 202) throw new Error(`async: expected 202, got ${response.status}`);
        acceptedIds.push((JSON.parse(response.body.toString('utf8')) as { id: string }).id);
        return response.answeredMs;
      };
      for (let i = 0; i < 20; i++) {
        expectImage(await admission.shoot(simple), 'admission');
        accepted(await jobs.accept(simple));
      }
      const acceptSamples: number[] = [];
      const admissionSamples: number[] = [];
      for (let i = 0; i < runs(200); i++) {
        admissionSamples.push(answeredMs(await admission.shoot(simple), 'admission'));
        acceptSamples.push(accepted(await jobs.accept(simple)));
      }
      record('admissionBesideAsync', admissionSamples);
      record('asyncAccept', acceptSamples);
      jobs.startWorker();
      // The accepted jobs run to their end before the batch is timed.
      await jobs.drain(acceptedIds);
      const hundred = Array.from({ length: 100 }, () => simple);
      const sequentialStart = performance.now();
      for (const body of hundred) expectImage(await ours.shoot(body), 'sequential');
      record('sequential100', [performance.now() - sequentialStart]);
      record('batch100', [await jobs.batch(hundred)]);
    } finally {
      await jobs.close();
    }
  }

  if (phase('cache')) {
    log('cache hit: the same page as "ours, warm", answered from the local S3 API');
    const cached = { ...simple, cache: true };
    expectImage(await ours.shoot(cached), 'cache miss');
    for (let i = 0; i < 20; i++) expectImage(await ours.shoot(cached), 'cache hit');
    const samples: number[] = [];
    for (let i = 0; i < runs(200); i++) samples.push(answeredMs(await ours.shoot(cached), 'cache hit'));
    record('cacheHit', samples);
  }
} finally {
  await ours.close();
  await floor.close();
}

if (phase('memory')) {
  log('memory: a fresh service, 250 captures, readings after 50 and 250');
  results.memory = await measureMemory();
}

await store.close();
await pages.close();
finishMachine(results.machine);
if (retries.size > 0) results.retriedShots = Object.fromEntries(retries);
results.durationSeconds = round((Date.now() - started) / 1000, 0);
results.targets = checkTargets(results);
await mkdir(dirname(outFile), { recursive: true });
await writeFile(outFile, `${JSON.stringify(results, null, 2)}\n`);

// The verdicts come from the file just written, so what is printed is what was published.
const saved = JSON.parse(await readFile(outFile, 'utf8')) as BenchResults;
console.log(`\n${markdownReport(saved)}\n\nMachine: ${machineLine(saved)}\n`);
if (saved.retriedShots)
  console.log(`Shots that failed and were taken again: ${JSON.stringify(saved.retriedShots)}\n`);
console.log(formatTargets(checkTargets(saved)));
console.log(`\nWritten to ${outFile} (${saved.durationSeconds} s)`);

/**
 * Resident memory (PSS) of the service (node + every Chromium process) and the size of its temp folder, after 50 and
 * after 250 sequential captures. The service runs with a temp folder of its own, so that only what it writes is
 * counted; the Chromium binary, already unpacked, is pointed at rather than unpacked again there.
 */
async function measureMemory(): Promise<MemoryResult> {
  const temp = await mkdtemp(join(tmpdir(), 'screenshot-bench-'));
  const savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = temp; // puppeteer puts the browser profile in os.tmpdir()
  try {
    const service = await startOurService(store, { TMPDIR: temp, CHROMIUM_PATH: executablePath });
    try {
      // A context is closed after its capture answers: let the last one finish closing before reading.
      const reading = async () => {
        await sleep(1000);
        collectGarbage();
        return { memory: await residentMemory(), temp: await diskUsage(temp) };
      };
      for (let i = 0; i < 50; i++) expectImage(await service.shoot(simple), 'memory');
      const at50 = await reading();
      for (let i = 50; i < 250; i++) expectImage(await service.shoot(simple), 'memory');
      const at250 = await reading();
      return {
        after50: at50.memory,
        after250: at250.memory,
        growthPercent: round(
          ((at250.memory.totalPssBytes - at50.memory.totalPssBytes) / at50.memory.totalPssBytes) * 100,
          2,
        ),
        tempAfter50Bytes: at50.temp,
        tempAfter250Bytes: at250.temp,
        tempGrowthBytes: at250.temp - at50.temp,
      };
    } finally {
      await service.close();
    }
  } finally {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
    await rm(temp, { recursive: true, force: true });
  }
}
