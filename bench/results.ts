import type { MachineDescription } from './machine';
import type { ResidentMemory } from './memory';
import type { Summary } from './stats';

/** Scenario keys, the speed targets' rows (plus two diagnostic rows), in table order. */
export const SCENARIOS = {
  oursWarm: 'ours, warm (1920x1080 PNG)',
  floor: 'floor: puppeteer-core, open page',
  floorProxy: 'floor through the egress proxy (diagnostic)',
  captureWebsite: 'capture-website, same binary',
  captureWebsiteOurFlags: 'capture-website with our launch flags (diagnostic)',
  launchPerRequest: 'launch per request',
  coldStartEmptyTemp: 'cold start, empty temp folder (new sandbox: new process to first image)',
  coldStart: 'cold start, temp folder of an earlier start (same sandbox)',
  coldStartUnpacking: 'cold start, empty temp folder, Chromium brotli-packed as before (diagnostic)',
  oursText: 'ours, text in 13 scripts and emoji (1920x1080 PNG)',
  oursFullPage: 'ours, full page 15,000 px',
  ours4k: 'ours, 3840x2160',
  oursJpeg: 'ours, jpeg q80',
  oursWebp: 'ours, webp q80',
  oursAvif: 'ours, avif q80 (encoded from the PNG by sharp)',
  oursMobile: 'ours, mobile preset',
  oursPlain: 'ours, same page as the next row, without its switches (interleaved with it)',
  oursClean: 'ours, blockAds + blockCookieBanners',
  oursLazy: 'ours, full page 15,000 px of lazy images',
  admission: 'admission alone (no capture)',
  admissionBesideAsync: 'admission alone, interleaved with the next row (its yardstick; the worker waits)',
  asyncAccept: 'accepting an async capture (202, job written and queued)',
  batch100: 'a batch of 100 captures, submission to its last job',
  sequential100: '100 sequential warm captures (the yardstick of the batch row)',
  cacheHit: 'cache hit (same page as ours, warm)',
} as const;
export type ScenarioKey = keyof typeof SCENARIOS;

export interface ScenarioResult extends Summary {
  label: string;
}

export interface MemoryResult {
  after50: ResidentMemory;
  after250: ResidentMemory;
  /** Growth of total resident memory from capture 50 to capture 250, in percent. */
  growthPercent: number;
  tempAfter50Bytes: number;
  tempAfter250Bytes: number;
  tempGrowthBytes: number;
}

export interface TargetResult {
  target: string;
  actual: string;
  /** undefined when the run did not measure what the target needs. */
  pass: boolean | undefined;
}

export interface BenchResults {
  generatedAt: string;
  durationSeconds: number;
  machine: MachineDescription;
  /** Milliseconds. */
  scenarios: Partial<Record<ScenarioKey, ScenarioResult>>;
  /** Medians inside the cold-start child (empty temp folder): process start to bundle loaded, and to the image. */
  coldStartBreakdown?: { loadedMs: number; imageMs: number };
  memory?: MemoryResult;
  /** Pixel comparison of our image with the floor's (same page, same size). */
  pixelsMatchFloor?: boolean;
  /** Shots that failed and were taken once more (bench/sampler.ts), per scenario; absent when none did. */
  retriedShots?: Record<string, number>;
  targets: TargetResult[];
}
