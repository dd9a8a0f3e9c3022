import type { BenchResults, TargetResult } from './results';

const MB = 1024 * 1024;

/** The speed, memory and cold-start targets (docs/performance.md), checked against medians of one run. */
export function checkTargets(results: BenchResults): TargetResult[] {
  const s = results.scenarios;
  const ours = s.oursWarm?.median;
  const ratio = (a: number | undefined, b: number | undefined) =>
    a !== undefined && b !== undefined ? a / b : undefined;
  const out: TargetResult[] = [];
  const add = (
    target: string,
    value: number | undefined,
    pass: (v: number) => boolean,
    show: (v: number) => string,
  ) => {
    out.push({
      target,
      actual: value === undefined ? 'not measured' : show(value),
      pass: value === undefined ? undefined : pass(value),
    });
  };
  // Measured through the renderer boundary (a separate process called with @aws-sdk/client-lambda).
  add(
    'ours, warm <= 1.1 x floor',
    ratio(ours, s.floor?.median),
    (v) => v <= 1.1,
    (v) => `${v.toFixed(2)} x floor`,
  );
  add(
    'ours >= 8 x faster than capture-website',
    ratio(s.captureWebsite?.median, ours),
    (v) => v >= 8,
    (v) => `${v.toFixed(1)} x`,
  );
  add(
    'ours >= 2 x faster than launch per request',
    ratio(s.launchPerRequest?.median, ours),
    (v) => v >= 2,
    (v) => `${v.toFixed(1)} x`,
  );
  add(
    'blockAds + blockCookieBanners <= 1.2 x the same page without them',
    ratio(s.oursClean?.median, s.oursPlain?.median),
    (v) => v <= 1.2,
    (v) => `${v.toFixed(2)} x`,
  );
  add(
    'avif <= 2 x the png capture of the same page',
    ratio(s.oursAvif?.median, s.oursPlain?.median),
    (v) => v <= 2,
    (v) => `${v.toFixed(2)} x`,
  );
  add(
    'full page 15,000 px of lazy images <= 1.5 s',
    s.oursLazy?.median,
    (v) => v <= 1500,
    (v) => `${Math.round(v)} ms`,
  );
  add(
    'admission alone <= 10 ms',
    s.admission?.median,
    (v) => v <= 10,
    (v) => `${v.toFixed(1)} ms`,
  );
  add(
    'accepting an async capture <= admission + 5 ms',
    s.asyncAccept && s.admissionBesideAsync
      ? s.asyncAccept.median - s.admissionBesideAsync.median
      : undefined,
    (v) => v <= 5,
    (v) => `+${v.toFixed(1)} ms`,
  );
  add(
    'a batch of 100 captures <= 1.2 x 100 sequential warm captures',
    ratio(s.batch100?.median, s.sequential100?.median),
    (v) => v <= 1.2,
    (v) => `${v.toFixed(2)} x`,
  );
  add(
    'cache hit <= 15 ms',
    s.cacheHit?.median,
    (v) => v <= 15,
    (v) => `${v.toFixed(1)} ms`,
  );
  add(
    'cache hit >= 10 x faster than a capture of the same page',
    ratio(ours, s.cacheHit?.median),
    (v) => v >= 10,
    (v) => `${v.toFixed(1)} x`,
  );
  add(
    'memory growth 50 -> 250 captures <= 10 %',
    results.memory?.growthPercent,
    (v) => v <= 10,
    (v) => `${v.toFixed(1)} %`,
  );
  add(
    'temp folder growth 50 -> 250 <= 1 MB',
    results.memory?.tempGrowthBytes,
    (v) => v <= MB,
    (v) => `${(v / 1024).toFixed(0)} KiB`,
  );
  add(
    'renderer cold start from an empty temp folder <= 1.0 s',
    s.coldStartEmptyTemp?.median,
    (v) => v <= 1000,
    (v) => `${v.toFixed(0)} ms`,
  );
  return out;
}

export function formatTargets(targets: TargetResult[]): string {
  return targets
    .map((t) => `${t.pass === undefined ? 'SKIP' : t.pass ? 'PASS' : 'FAIL'}  ${t.target}: ${t.actual}`)
    .join('\n');
}
