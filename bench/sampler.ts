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

/**
 * Runs the contenders in rounds, each round in a new shuffled order, so that the machine's noise (a shared
 * 2-core box) falls on all of them alike and their ratios stay meaningful. Contenders with fewer runs simply
 * drop out of the later rounds.
 */
export async function interleave(
  contenders: Contender[],
  random: () => number,
): Promise<Map<string, number[]>> {
  const maxWarmUp = Math.max(0, ...contenders.map((c) => c.warmUp));
  for (let round = 0; round < maxWarmUp; round++) {
    for (const c of shuffled(
      contenders.filter((c) => c.warmUp > round),
      random,
    )) {
      await c.shoot();
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
      let result: unknown;
      const elapsed = await timed(async () => {
        result = await c.shoot();
      });
      samples.get(c.key)?.push(typeof result === 'number' ? result : elapsed);
      await sleep(GAP_MS);
    }
  }
  return samples;
}
