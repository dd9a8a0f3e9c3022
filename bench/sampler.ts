import { setTimeout as sleep } from 'node:timers/promises';
import { shuffled, timed } from './stats';

export interface Contender {
  key: string;
  /** Timed samples wanted, after `warmUp` untimed ones. */
  runs: number;
  warmUp: number;
  /** One capture; a number it returns is taken as the sample (e.g. time to the answer), else the call is timed. */
  shoot(): Promise<unknown>;
}

/**
 * Pause between samples, the same for every contender: a client's round trip at least separates two requests, and
 * it keeps one sample's clean-up (a browser exiting) from being billed to the next.
 */
const GAP_MS = 25;

/** Shots that failed and were taken once more, per contender: the run reports them. */
export type Retries = Map<string, number>;

/**
 * One shot, taken once more if it fails: browsers started with @sparticuz/chromium's own flags (capture-website,
 * launch per request) now and then die as they start (docs/performance.md), which would otherwise end a run of
 * minutes. The failed attempt is counted, never timed; a second failure in a row ends the run.
 */
async function shootOnce(c: Contender, retries: Retries): Promise<{ result: unknown; elapsed: number }> {
  const attempt = async () => {
    let result: unknown;
    const elapsed = await timed(async () => {
      result = await c.shoot();
    });
    return { result, elapsed };
  };
  try {
    return await attempt();
  } catch (error) {
    process.stderr.write(`[bench] ${c.key}: a shot failed, taken once more (${(error as Error).message})\n`);
    retries.set(c.key, (retries.get(c.key) ?? 0) + 1);
    await sleep(GAP_MS);
    return attempt();
  }
}

/**
 * Runs the contenders in rounds, each round in a new shuffled order, so that the machine's noise (a shared
 * 2-core box) falls on all of them alike and their ratios stay meaningful. Contenders with fewer runs simply
 * drop out of the later rounds. Failed shots taken again are added to `retries`.
 */
export async function interleave(
  contenders: Contender[],
  random: () => number,
  retries: Retries = new Map(),
): Promise<Map<string, number[]>> {
  const maxWarmUp = Math.max(0, ...contenders.map((c) => c.warmUp));
  for (let round = 0; round < maxWarmUp; round++) {
    for (const c of shuffled(
      contenders.filter((c) => c.warmUp > round),
      random,
    )) {
      await shootOnce(c, retries);
      await sleep(GAP_MS);
    }
  }
  const samples = new Map<string, number[]>(contenders.map((c) => [c.key, []]));
  const maxRuns = Math.max(0, ...contenders.map((c) => c.runs));
  for (let round = 0; round < maxRuns; round++) {
    for (const c of shuffled(
      contenders.filter((c) => c.runs > round),
      random,
    )) {
      const { result, elapsed } = await shootOnce(c, retries);
      samples.get(c.key)?.push(typeof result === 'number' ? result : elapsed);
      await sleep(GAP_MS);
    }
  }
  return samples;
}
