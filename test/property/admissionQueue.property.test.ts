import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import { mayStart } from '../../shared/accounts/fairShare';

/**
 * Red team (round 16): random sequences of run / runJob / abort / finish against the real AdmissionQueue, checking
 * after every step: places given equal tasks running (no leak, no over-give, within shared + headroom), at most
 * `maxWaiting` waiting, no task started twice or after its request was refused, no waiter left waiting while it may
 * start, no exception out of an abort listener, and, once every client hangs up and every task finishes, every
 * request settled (none hangs). Several requests may share one AbortController (one client, several requests).
 *
 * Round 16 found no leak, double start, hang or overfull queue this way; it is kept as a guard, with the requests
 * set aside (round 16's other findings) held to waiting only while every place is taken, and signed links' requests
 * (round 17) to all but one of their account's shared places.
 */

type Op =
  | { kind: 'run'; account: number; signal: number; link: boolean }
  | { kind: 'job'; account: number }
  | { kind: 'abort'; index: number }
  | { kind: 'abortShared'; index: number }
  | { kind: 'finish'; index: number };

interface Req {
  account: string;
  link: boolean;
  controller?: AbortController;
  calls: number;
  finishTask?: () => void;
  finished: boolean;
  outcome?: 'ok' | 'error';
  error?: unknown;
}

const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('run' as const),
    account: fc.integer({ min: 0, max: 3 }),
    signal: fc.integer({ min: -3, max: 2 }),
    link: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('job' as const), account: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('abort' as const), index: fc.nat(40) }),
  fc.record({ kind: fc.constant('abortShared' as const), index: fc.nat(2) }),
  fc.record({ kind: fc.constant('finish' as const), index: fc.nat(40) }),
);

async function check(shared: number, headroom: number, maxWaiting: number, ops: Op[]) {
  const queue = new AdmissionQueue({ shared, headroom }, maxWaiting);
  // biome-ignore lint/suspicious/noExplicitAny: white-box look at the queue's state
  const inner = queue as any;
  const reqs: Req[] = [];
  const invariants = () => {
    const running = reqs.filter((r) => r.calls > 0 && !r.finished);
    for (const r of reqs) expect(r.calls).toBeLessThanOrEqual(1);
    for (const r of reqs) if (r.outcome === 'error') expect(r.calls).toBe(0);
    expect(inner.total).toBe(running.length);
    expect(inner.total).toBeLessThanOrEqual(shared + headroom);
    for (const [account, count] of inner.running as Map<string, number>)
      expect(count).toBe(running.filter((r) => r.account === account).length);
    expect(inner.waiting.length).toBeLessThanOrEqual(maxWaiting);
    expect(inner.aside.length).toBeLessThanOrEqual(maxWaiting);
    // A request set aside waits only while every waiting place is taken.
    if (inner.aside.length > 0) expect(inner.waiting.length).toBe(maxWaiting);
    // A link's requests hold all but one of the shared places of their account (one at the least).
    for (const [account, count] of inner.linksRunning as Map<string, number>) {
      expect(count).toBe(running.filter((r) => r.account === account && r.link).length);
      expect(count).toBeLessThanOrEqual(Math.max(1, shared - 1));
    }
    for (const w of inner.waiting) {
      const free = mayStart({ shared, headroom }, inner.total, inner.running.get(w.accountId) ?? 0);
      const linkRoom = (inner.linksRunning.get(w.accountId) ?? 0) < Math.max(1, shared - 1);
      expect(free && (!w.link || linkRoom)).toBe(false);
    }
  };
  // A few controllers shared by several requests (one client's signal passed to more than one request).
  const sharedControllers = [new AbortController(), new AbortController(), new AbortController()];
  const submit = (account: string, job: boolean, signal: number, link = false) => {
    const req: Req = { account, link, calls: 0, finished: false };
    if (signal === -1 || signal === -2) req.controller = new AbortController();
    else if (signal >= 0) req.controller = sharedControllers[signal];
    const task = () => {
      req.calls++;
      return new Promise<void>((resolve) => {
        req.finishTask = () => {
          req.finished = true;
          resolve();
        };
      });
    };
    const promise = job
      ? queue.runJob(account, task)
      : queue.run(account, task, req.controller?.signal, link ? 'signedLink' : 'api');
    promise.then(
      () => {
        req.outcome = 'ok';
      },
      (error) => {
        req.outcome = 'error';
        req.error = error;
      },
    );
    reqs.push(req);
  };
  for (const op of ops) {
    if (op.kind === 'run') submit(`a${op.account}`, false, op.signal, op.link);
    else if (op.kind === 'job') submit(`a${op.account}`, true, -3);
    else if (op.kind === 'abortShared') {
      const controller = sharedControllers[op.index] as AbortController;
      expect(() => controller.abort()).not.toThrow();
      sharedControllers[op.index] = new AbortController();
    } else if (op.kind === 'abort') {
      const r = reqs[op.index % Math.max(1, reqs.length)];
      expect(() => r?.controller?.abort()).not.toThrow();
    } else {
      const r = reqs.filter((x) => x.finishTask && !x.finished)[op.index % 8];
      r?.finishTask?.();
    }
    await flush();
    invariants();
  }
  // Every client hangs up; every task finishes: nothing may stay unsettled.
  for (const r of reqs) expect(() => r.controller?.abort()).not.toThrow();
  for (let round = 0; round < 30; round++) {
    await flush();
    for (const r of reqs) if (r.finishTask && !r.finished) r.finishTask();
    await flush();
    invariants();
  }
  for (const r of reqs)
    expect(r.outcome, JSON.stringify({ ops, r: { ...r, controller: !!r.controller } })).toBeDefined();
  expect(inner.total).toBe(0);
  expect(inner.waiting.length).toBe(0);
  expect(inner.aside.length).toBe(0);
  expect(inner.linksRunning.size).toBe(0);
}

describe('AdmissionQueue invariants under random run/abort/finish (red team 16)', () => {
  it('holds its invariants and settles every request', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 2 }),
        fc.integer({ min: 0, max: 1 }),
        fc.integer({ min: 0, max: 4 }),
        fc.array(opArb, { maxLength: 40 }),
        async (shared, headroom, maxWaiting, ops) => check(shared, headroom, maxWaiting, ops),
      ),
      { seed: 16, numRuns: 1000 },
    );
  });
});
