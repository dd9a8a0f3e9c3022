import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import { capacityOfReserved, mayStart } from '../../shared/accounts/fairShare';
import { InvokedRenderer } from '../../shared/capture/invokedRenderer';
import { AppError, CapacityFullError, CaptureFailedError, TooManyCapturesError } from '../../shared/errors';
import { keyManagement } from '../../shared/keys/keyManagement';
import { type CaptureScreenshot, captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { TIMED_OUT_SLOT_PENALTY_MS } from '../../shared/timing';
import { deferred } from '../helpers/deferred';
import {
  FakeRenderer,
  fakeSessions,
  MemoryCaptureSlots,
  MemoryCreditLedger,
  MemoryKeyStore,
  memoryScreenshotDeps,
} from '../helpers/memoryPorts';
import { HEADROOM_RENDERER, ReservedLambda, SHARED_RENDERER } from '../helpers/reservedLambda';

/**
 * Fair sharing of the capture capacity: the rule, the local queue that plays it, and the use case as deployed, where
 * the renderers' reserved concurrency plays it (the shared renderer first, the headroom renderer for newcomers).
 */

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('the fair-share rule', () => {
  const capacity = { shared: 4, headroom: 2 };

  it('lets anyone start below the shared capacity', () => {
    expect(mayStart(capacity, 3, 3)).toBe(true);
  });

  it('keeps the headroom for accounts that hold no slot', () => {
    expect(mayStart(capacity, 4, 0)).toBe(true);
    expect(mayStart(capacity, 5, 0)).toBe(true);
    expect(mayStart(capacity, 4, 1)).toBe(false);
    expect(mayStart(capacity, 6, 0)).toBe(false);
  });

  it('splits a reserved concurrency into a shared part and a tenth of headroom', () => {
    expect(capacityOfReserved(50)).toEqual({ shared: 45, headroom: 5 });
    expect(capacityOfReserved(5)).toEqual({ shared: 4, headroom: 1 });
    expect(capacityOfReserved(1)).toEqual({ shared: 1, headroom: 0 });
  });
});

/**
 * A task for the queue that runs until `finish` is called (before or after it started): a request's (`run`), or a
 * queued job's (`runJob`).
 */
function held(queue: AdmissionQueue, accountId: string, via: 'run' | 'runJob' = 'run') {
  const finished = deferred();
  const task = { started: false, finish: finished.resolve, done: Promise.resolve() };
  task.done = queue[via](accountId, async () => {
    task.started = true;
    await finished.promise;
  });
  return task;
}

describe('the local capture queue', () => {
  it('starts an account with nothing running on the headroom while another fills the capacity', async () => {
    const queue = new AdmissionQueue({ shared: 2, headroom: 1 }, 10);
    const attacker = [held(queue, 'a'), held(queue, 'a'), held(queue, 'a')];
    const victim = held(queue, 'v');
    await tick();
    expect(attacker.map((task) => task.started)).toEqual([true, true, false]);
    expect(victim.started).toBe(true);
    // The headroom is for newcomers only: the victim's second request waits like the attacker's third.
    const second = held(queue, 'v');
    await tick();
    expect(second.started).toBe(false);
    for (const task of [...attacker, victim, second]) task.finish();
    await Promise.all([...attacker, victim, second].map((task) => task.done));
  });

  it('gives a freed place to the waiting account that runs the fewest, not to the earliest request', async () => {
    const queue = new AdmissionQueue({ shared: 2, headroom: 0 }, 10);
    const first = held(queue, 'a');
    const second = held(queue, 'a');
    const aWaits = held(queue, 'a');
    const bWaits = held(queue, 'b');
    await tick();
    expect([aWaits.started, bWaits.started]).toEqual([false, false]);
    first.finish();
    await first.done;
    await tick();
    expect(bWaits.started).toBe(true);
    expect(aWaits.started).toBe(false);
    second.finish();
    await second.done;
    await tick();
    expect(aWaits.started).toBe(true);
    aWaits.finish();
    bWaits.finish();
    await Promise.all([aWaits.done, bWaits.done]);
  });

  it("lets one queued job of an account wait, refuses its next at once, and lets a newcomer's job in on the headroom", async () => {
    const queue = new AdmissionQueue({ shared: 2, headroom: 1 }, 10);
    const running = [held(queue, 'a'), held(queue, 'a')];
    const waiting = held(queue, 'a', 'runJob');
    await tick();
    expect(waiting.started).toBe(false);
    let ran = false;
    const refused = queue.runJob('a', async () => {
      ran = true;
    });
    await expect(refused).rejects.toBeInstanceOf(CapacityFullError);
    expect(ran).toBe(false);
    // The newcomer's job starts on the headroom; the waiting job starts on the first place freed.
    expect(await queue.runJob('b', async () => 'ran')).toBe('ran');
    running[0]?.finish();
    await running[0]?.done;
    await tick();
    expect(waiting.started).toBe(true);
    waiting.finish();
    running[1]?.finish();
    await Promise.all([running[1]?.done, waiting.done]);
  });

  /**
   * Red team (round 20): each account with a backlog kept one job waiting here, so four accounts' batches held every
   * place of the local job poller (shared + headroom + 2) and a newcomer's message went unread for a whole capture.
   * Fixed: one job of all accounts waits (runJob), and the poller has a place more than run and wait here
   * (pollerPlaces); a job of an account running fewer takes the waiting job's place, which goes back to the job queue.
   */
  it("lets one job of all accounts wait, keeps a poller place free, and lets a newcomer's job take the waiting one's turn", async () => {
    const queue = new AdmissionQueue({ shared: 2, headroom: 1 }, 10);
    expect(queue.pollerPlaces).toBe(2 + 1 + 1 + 1);
    const running = [held(queue, 'a'), held(queue, 'b')];
    const aWaits = held(queue, 'a', 'runJob');
    const aRefused = aWaits.done.catch((error: unknown) => error);
    // Another account with a backlog, running as many as a: back to the job queue, not a second waiting job.
    await expect(queue.runJob('b', async () => 'ran')).rejects.toBeInstanceOf(CapacityFullError);
    // The newcomer's job starts on the headroom, and another's, with the headroom full, takes a's waiting place.
    const newcomer = held(queue, 'c', 'runJob');
    const late = held(queue, 'd', 'runJob');
    await tick();
    expect([aWaits.started, newcomer.started, late.started]).toEqual([false, true, false]);
    expect(await aRefused).toBeInstanceOf(CapacityFullError);
    running[0]?.finish();
    await running[0]?.done;
    await tick();
    expect(late.started).toBe(true);
    for (const task of [running[1], newcomer, late]) task?.finish();
    await Promise.all([running[1], newcomer, late].map((task) => task?.done));
  });
});

describe('the local capture queue’s waiting places', () => {
  /** One place running (account r), `places` waiting places; what each new request came to. */
  function fullQueue(places: number) {
    const queue = new AdmissionQueue({ shared: 1, headroom: 0 }, places);
    const runner = held(queue, 'r');
    const outcomes: string[] = [];
    const wait = (accountId: string, signal?: AbortSignal) => {
      const finished = deferred();
      const done = queue
        .run(accountId, () => finished.promise, signal)
        .then(
          () => `${accountId} ran`,
          (error: unknown) => `${accountId} ${(error as AppError).status}`,
        )
        .then((outcome) => {
          outcomes.push(outcome);
          return outcome;
        });
      return { finish: finished.resolve, done };
    };
    return { queue, runner, outcomes, wait };
  }

  it('goes to an account that waits with fewer: the latest of the account that waits with the most makes way', async () => {
    const { runner, outcomes, wait } = fullQueue(4);
    const attacker = ['a', 'a', 'a', 'a'].map((id) => wait(id));
    const victim = wait('v');
    const second = wait('v');
    await tick();
    // Two each now: neither takes a place from the other, and a third request of v's is turned away.
    const third = wait('v');
    await tick();
    expect(outcomes).toEqual(['v 503']);
    for (const task of [...attacker, victim, second, third]) task.finish();
    runner.finish();
    await Promise.all([...attacker, victim, second, third].map((task) => task.done));
    // The attacker's two latest gave their places up, waited aside, and ran as places freed.
    expect([...outcomes].sort()).toEqual(['a ran', 'a ran', 'a ran', 'a ran', 'v 503', 'v ran', 'v ran']);
  });

  it('is given up at once by a request whose client left, and never taken by one that already had', async () => {
    const { runner, outcomes, wait } = fullQueue(2);
    const leaving = new AbortController();
    const gone = [wait('a', leaving.signal), wait('a', leaving.signal)];
    leaving.abort();
    await Promise.all(gone.map((task) => task.done));
    expect(outcomes).toEqual(['a 499', 'a 499']);
    expect(await wait('b', AbortSignal.abort()).done).toBe('b 499');
    // Both places are free again: two requests wait, and run in turn.
    const waiting = [wait('c'), wait('d')];
    await tick();
    expect(outcomes).toHaveLength(3);
    for (const task of waiting) task.finish();
    runner.finish();
    expect(await Promise.all(waiting.map((task) => task.done))).toEqual(['c ran', 'd ran']);
  });
});

/**
 * Deployed, the capacity is the renderers' reserved concurrency: the front over Lambda that throttles each renderer
 * beyond its reservation (2 shared, 1 headroom), the account slots in memory (3 per account).
 */
describe('the screenshot use case over the shared and headroom renderers', () => {
  let clock: number;
  let credits: MemoryCreditLedger;
  let slots: MemoryCaptureSlots;
  let browser: FakeRenderer;
  let lambda: ReservedLambda;
  let capture: CaptureScreenshot;
  const apiKeys = new Map<string, string>();

  beforeEach(async () => {
    clock = Date.UTC(2026, 0, 1, 10, 30);
    const keys = new MemoryKeyStore();
    credits = new MemoryCreditLedger();
    slots = new MemoryCaptureSlots(3);
    browser = new FakeRenderer();
    lambda = new ReservedLambda({ [SHARED_RENDERER]: 2, [HEADROOM_RENDERER]: 1 }, browser);
    const renderer = new InvokedRenderer(lambda.client, SHARED_RENDERER, HEADROOM_RENDERER);
    capture = captureScreenshot(
      memoryScreenshotDeps({ keys, credits, renderer, captureSlots: slots, now: () => clock }),
    );
    const manage = keyManagement({
      sessions: fakeSessions,
      keys,
      credits,
      cipher: new AesGcmSecretCipher(randomBytes(32)),
      freeCredits: 0,
    });
    for (const account of ['attacker', 'victim', 'other']) {
      apiKeys.set(account, (await manage.createKey(`session:${account}`, () => ({ name: 'k' }))).key);
      await credits.set(account, 10);
    }
  });

  const shoot = (account: string, url: string) =>
    capture({ apiKey: apiKeys.get(account), request: () => ({ url }), deadline: clock + 90_000 });
  /**
   * The attacker's slow capture of `path`, its client hanging up `afterMs` into it (as many renderers running as
   * `running` then); the capture's deadline is 90 s after it started.
   */
  const hungUp = async (path: string, afterMs: number, running = 1) => {
    const hangUp = new AbortController();
    const leaving = capture({
      apiKey: apiKeys.get('attacker'),
      request: () => ({ url: `https://slow.test/${path}` }),
      deadline: clock + 90_000,
      signal: hangUp.signal,
    });
    await until(() => lambda.runningOn(SHARED_RENDERER) === running);
    clock += afterMs;
    hangUp.abort();
    return leaving;
  };
  const statusOf = (outcome: Awaited<ReturnType<CaptureScreenshot>>) =>
    outcome.ok ? 200 : outcome.error instanceof AppError ? outcome.error.status : 500;
  /** Two slow captures of the attacker: the shared renderer is full. */
  const fillShared = async () => {
    const running = [shoot('attacker', 'https://slow.test/1'), shoot('attacker', 'https://slow.test/2')];
    await until(() => lambda.runningOn(SHARED_RENDERER) === 2);
    return running;
  };

  it('refuses an account that holds a slot when the shared renderer is full: 429, its credits and slot back', async () => {
    const attacks = await fillShared();
    const third = await shoot('attacker', 'https://slow.test/3');
    expect(third.ok).toBe(false);
    expect((third as { error: unknown }).error).toBeInstanceOf(TooManyCapturesError);
    expect((third as { error: TooManyCapturesError }).error.headers(clock)).toEqual({ 'Retry-After': '1' });
    // It never asked the headroom renderer: the headroom is for newcomers.
    expect(lambda.invocations.filter((call) => call.functionName === HEADROOM_RENDERER)).toEqual([]);
    expect(slots.held('attacker')).toBe(2);
    browser.finishSlow();
    const answers = await Promise.all(attacks);
    expect(answers.map(statusOf)).toEqual([200, 200]);
    // The two captures charged, the refused one given back.
    const charged = answers.reduce(
      (sum, answer) => sum + (answer.ok && 'screenshot' in answer ? answer.screenshot.creditsCharged : 0),
      0,
    );
    expect(charged).toBe(2);
    expect(await credits.balance('attacker')).toBe(10 - charged);
  });

  it('lets a newcomer in on the headroom renderer when the shared one is full', async () => {
    const attacks = await fillShared();
    const victim = shoot('victim', 'https://slow.test');
    await until(() => lambda.runningOn(HEADROOM_RENDERER) === 1);
    expect(lambda.invocations.slice(-2)).toEqual([
      { functionName: SHARED_RENDERER, throttled: true },
      { functionName: HEADROOM_RENDERER, throttled: false },
    ]);
    browser.finishSlow();
    expect((await Promise.all([...attacks, victim])).map(statusOf)).toEqual([200, 200, 200]);
  });

  it('refuses a newcomer when both renderers are full: 429, its credits and slot back', async () => {
    const attacks = await fillShared();
    const victim = shoot('victim', 'https://slow.test');
    await until(() => lambda.runningOn(HEADROOM_RENDERER) === 1);
    const other = await shoot('other', 'https://a.test');
    expect((other as { error: unknown }).error).toBeInstanceOf(TooManyCapturesError);
    expect(await credits.balance('other')).toBe(10);
    expect(slots.held('other')).toBe(0);
    browser.finishSlow();
    await Promise.all([...attacks, victim]);
  });

  it('leaves a failure of the invocation that is not a throttle as it was: 500, no headroom, credits back', async () => {
    lambda.throwOn.set(
      SHARED_RENDERER,
      Object.assign(new Error('Lambda is down'), { name: 'ServiceException' }),
    );
    const outcome = await shoot('victim', 'https://a.test');
    expect(statusOf(outcome)).toBe(500);
    expect((outcome as { error: unknown }).error).toBeInstanceOf(CaptureFailedError);
    expect(lambda.invocations).toEqual([]);
    expect(await credits.balance('victim')).toBe(10);
    expect(slots.held('victim')).toBe(0);
  });

  it('holds the slot of a capture that ran out of its time budget for a while, but not the renderer', async () => {
    const outcome = await shoot('attacker', 'https://timeout.test');
    expect(statusOf(outcome)).toBe(500);
    expect(await credits.balance('attacker')).toBe(10);
    expect(slots.held('attacker')).toBe(1);
    expect(lambda.runningOn(SHARED_RENDERER)).toBe(0);
    // Holding a penalty, the account is no newcomer: it gets no headroom.
    const others = [shoot('other', 'https://slow.test'), shoot('other', 'https://slow.test')];
    await until(() => lambda.runningOn(SHARED_RENDERER) === 2);
    expect(statusOf(await shoot('attacker', 'https://a.test'))).toBe(429);
    browser.finishSlow();
    await Promise.all(others);
    clock += TIMED_OUT_SLOT_PENALTY_MS;
    expect(statusOf(await shoot('attacker', 'https://a.test'))).toBe(200);
    expect(slots.held('attacker')).toBe(0);
  });

  it('takes slots away from an account whose captures keep running out of time', async () => {
    for (let i = 0; i < 3; i++) await shoot('attacker', 'https://timeout.test');
    expect(statusOf(await shoot('attacker', 'https://a.test'))).toBe(429);
    clock += TIMED_OUT_SLOT_PENALTY_MS;
    expect(statusOf(await shoot('attacker', 'https://a.test'))).toBe(200);
  });

  it("holds the slot of a page's other failures as long again as the capture ran, so none holds capacity for free", async () => {
    // A long wait before a click that matches nothing: free, but the account pays in slot time.
    const failing = shoot('attacker', 'https://slow.test/pagefault');
    await until(() => lambda.runningOn(SHARED_RENDERER) === 1);
    clock += 40_000;
    browser.finishSlow();
    expect(statusOf(await failing)).toBe(500);
    expect(await credits.balance('attacker')).toBe(10);
    expect(slots.held('attacker', clock + 39_000)).toBe(1);
    expect(slots.held('attacker', clock + 40_000)).toBe(0);
  });

  it('holds the slot of a capture whose client hung up until its renderer, which no hang-up stops, surely stopped', async () => {
    const deadline = clock + 90_000;
    expect(statusOf(await hungUp('left', 20_000))).toBe(499);
    expect(await credits.balance('attacker')).toBe(10);
    expect(slots.held('attacker', clock + 20_000)).toBe(1);
    expect(slots.held('attacker', deadline - 1)).toBe(1);
    expect(slots.held('attacker', deadline)).toBe(0);
    browser.finishSlow();
    await until(() => lambda.runningOn(SHARED_RENDERER) === 0);
  });

  it('holds a late hang-up as long again as the capture ran, past its deadline', async () => {
    expect(statusOf(await hungUp('left', 60_000))).toBe(499);
    expect(slots.held('attacker', clock + 59_000)).toBe(1);
    expect(slots.held('attacker', clock + 60_000)).toBe(0);
    browser.finishSlow();
    await until(() => lambda.runningOn(SHARED_RENDERER) === 0);
  });

  it('takes no headroom for an account whose hung-up captures still fill the shared renderer', async () => {
    // Two captures hung up a second in, their renderers still running (a long `delay`, say).
    for (let i = 1; i <= 2; i++) {
      expect(statusOf(await hungUp(String(i), 1_000, i))).toBe(499);
      clock += 5_000;
    }
    expect(statusOf(await shoot('attacker', 'https://a.test'))).toBe(429);
    expect(lambda.runningOn(HEADROOM_RENDERER)).toBe(0);
    browser.finishSlow();
    await until(() => lambda.runningOn(SHARED_RENDERER) === 0);
  });

  it('holds a slot as long again as the capture ran when its image never reached the client, though its slot had gone back', async () => {
    const capturing = shoot('attacker', 'https://slow.test/undelivered');
    await until(() => lambda.runningOn(SHARED_RENDERER) === 1);
    clock += 30_000;
    browser.finishSlow();
    const outcome = await capturing;
    expect(outcome.ok).toBe(true);
    expect(slots.held('attacker', clock)).toBe(0);
    // The client hung up before the image was handed over: free, and the account pays in slot time.
    expect(await (outcome as { undelivered: () => Promise<boolean> }).undelivered()).toBe(true);
    expect(await credits.balance('attacker')).toBe(10);
    expect(slots.held('attacker', clock + 29_000)).toBe(1);
    expect(slots.held('attacker', clock + 30_000)).toBe(0);
  });

  it('gives the slot back at once after a capture that failed for a reason of ours', async () => {
    expect(statusOf(await shoot('attacker', 'https://fail.test'))).toBe(500);
    expect(slots.held('attacker')).toBe(0);
  });
});

/** Waits (a few macrotasks at a time) until `condition` holds: invocations go through streams and timers. */
async function until(condition: () => boolean): Promise<void> {
  for (let round = 0; round < 1_000 && !condition(); round++)
    await new Promise((resolve) => setTimeout(resolve, 1));
  expect(condition()).toBe(true);
}
