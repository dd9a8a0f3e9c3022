import { describe, expect, it } from 'vitest';
import { interleave, type Retries } from '../../bench/sampler';
import { seededRandom } from '../../bench/stats';

/** A contender whose shots fail at the given (1-based) attempts, and answer their attempt number otherwise. */
function contender(key: string, failing: number[]) {
  let attempts = 0;
  return {
    key,
    runs: 3,
    warmUp: 1,
    shoot: async () => {
      attempts++;
      if (failing.includes(attempts)) throw new Error(`attempt ${attempts} failed`);
      return attempts;
    },
  };
}

describe('the bench sampler', () => {
  it('takes a failed shot once more, counts it, and keeps only the sample that succeeded', async () => {
    const retries: Retries = new Map();
    const samples = await interleave(
      [contender('flaky', [1, 3]), contender('steady', [])],
      seededRandom(1),
      retries,
    );
    // flaky: attempt 1 (warm-up) failed, 2 replaced it; 3 (first sample) failed, 4 replaced it; then 5 and 6.
    expect(samples.get('flaky')).toEqual([4, 5, 6]);
    expect(samples.get('steady')).toEqual([2, 3, 4]);
    expect(Object.fromEntries(retries)).toEqual({ flaky: 2 });
  });

  it('ends the run when a shot fails twice in a row', async () => {
    await expect(interleave([contender('broken', [2, 3])], seededRandom(1))).rejects.toThrow(
      'attempt 3 failed',
    );
  });
});
