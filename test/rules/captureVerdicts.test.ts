import { describe, expect, it } from 'vitest';
import { captureVerdicts } from '../../shared/egress/captureVerdicts';
import type { EgressGate, EgressVerdict } from '../../shared/egress/egressGate';

/** A gate that answers `verdict` for every name, counting how often it is asked. */
function countingGate(verdict: EgressVerdict) {
  const asked: string[] = [];
  const gate: EgressGate = {
    async check(host) {
      asked.push(host);
      return verdict;
    },
  };
  return { gate, asked };
}

describe("a capture's kept verdicts", () => {
  it('keep an all-public verdict with only the addresses tried, and a refusal', async () => {
    const many = Array.from({ length: 3_000 }, (_, i) => `93.184.${Math.floor(i / 250)}.${i % 250}`);
    const publicOne = countingGate({ kind: 'allowed', addresses: many });
    const verdicts = captureVerdicts(publicOne.gate, 4);
    const first = await verdicts.check('big.example', 443);
    await verdicts.check('big.example', 443);
    expect(publicOne.asked).toEqual(['big.example']);
    expect(first).toEqual({ kind: 'allowed', addresses: many.slice(0, 4) });

    const refused = countingGate({ kind: 'refused', reason: 'private', allowable: true });
    const refusals = captureVerdicts(refused.gate, 4);
    await refusals.check('inner.example', 80);
    await refusals.check('inner.example', 80);
    expect(refused.asked).toEqual(['inner.example']);
  });

  it('ask again for a verdict that allows a private address, or a name that did not resolve', async () => {
    for (const verdict of [
      { kind: 'allowed', addresses: ['93.184.215.14', '127.0.0.1'] },
      { kind: 'unresolved', reason: 'ENOTFOUND' },
    ] as EgressVerdict[]) {
      const counted = countingGate(verdict);
      const verdicts = captureVerdicts(counted.gate, 4);
      await verdicts.check('dev.example', 5173);
      await verdicts.check('dev.example', 5173);
      expect(counted.asked, verdict.kind).toHaveLength(2);
    }
  });
});
