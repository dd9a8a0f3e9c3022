/**
 * Red team 14: a request that takes another account's waiting place and then hangs up turns that account's request
 * into a 503 for nothing (local/admissionQueue.ts, makeRoomFor + the abort listener).
 *
 * What it shows: the waiting places are full, and victim V waits with two requests. Attacker A (waiting with none)
 * sends one request: it takes the place of V's latest, which is refused at once with OverloadedError (503). A then
 * hangs up while it waits: its place is simply given up. The queue now has a free waiting place, and V's request,
 * which was turned away to make room for A, is gone. A repeats this at will, each time ending one of V's waiting
 * requests: a waiter that leaves costs nothing (it was never counted against any rate window; the FullWindows memo
 * only stops an account whose window the store already saw full, and A's window never fills this way).
 *
 * Why it matters: before round 13's fix A would simply get the 503 itself; now any account (a free one) can evict
 * others' waiting requests for free, without ever using a place. The fairness displacement should only hand a place
 * to a request that actually keeps it.
 *
 * Fixed: the displaced waiter is set aside and takes the first waiting place that frees, the one the leaving request
 * gave up included (local/admissionQueue.ts, `aside`; round 14 first bound it to the request that took its place,
 * which rounds 15 and 16 broke, below).
 *
 * Real parts: the local queue itself (AdmissionQueue), driven as the local server drives it (an AbortSignal per
 * request, as captureScreenshot passes the client's).
 */
import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import { ClientGoneError, OverloadedError } from '../../shared/errors';
import { deferred } from '../helpers/deferred';

/** What a promise came to within `ms`, or 'still waiting'. */
const within = <T>(promise: Promise<T>, ms = 100) =>
  Promise.race([
    promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), ms)),
  ]);

describe('a waiting place taken from another account by a request that then hangs up', () => {
  it('is given back: the displaced request is not answered 503', async () => {
    // One place, no headroom, two waiting places.
    const queue = new AdmissionQueue({ shared: 1, headroom: 0 }, 2);
    const running = deferred();
    const busy = queue.run('acct-x', () => running.promise);

    // Victim V waits with two requests: every waiting place is taken.
    const victimFirst = queue.run('acct-v', async () => 'v1');
    const victimSecond = queue.run('acct-v', async () => 'v2');
    const secondOutcome = victimSecond.then(
      (value) => value,
      (error: unknown) => error,
    );

    // Attacker A (waiting with none) takes V's latest place, then hangs up at once.
    const hangUp = new AbortController();
    const attacker = queue.run('acct-a', async () => 'a', hangUp.signal).catch((error: unknown) => error);
    hangUp.abort();
    expect(await attacker).toBeInstanceOf(ClientGoneError);

    // The running capture ends; V's requests run in turn.
    running.resolve();
    await busy;
    expect(await victimFirst).toBe('v1');
    const second = await secondOutcome;
    // On the current code V's second request was answered OverloadedError (503) the moment A came, and A never
    // used the place it took.
    expect(second).not.toBeInstanceOf(OverloadedError);
    expect(second).toBe('v2');
  });

  it('cannot be used over and over to turn every one of a victim’s waiting requests away', async () => {
    const queue = new AdmissionQueue({ shared: 1, headroom: 0 }, 3);
    const running = deferred();
    const busy = queue.run('acct-x', () => running.promise);

    const victim: Promise<unknown>[] = [];
    const refusedVictims = () =>
      Promise.all(
        victim.map((request) =>
          Promise.race([
            request.then(
              () => 'ran',
              (error: unknown) => (error instanceof OverloadedError ? '503' : 'other'),
            ),
            new Promise((resolve) => setTimeout(() => resolve('waiting'), 10)),
          ]),
        ),
      );
    // V sends requests while a waiting place is free (never one that the full queue would refuse anyway).
    const waitingCount = () => (queue as unknown as { waiting: unknown[] }).waiting.length;
    const fillAsVictim = () => {
      while (victim.length < 10 && waitingCount() < 3) {
        const request = queue.run('acct-v', async () => 'v');
        request.catch(() => undefined);
        victim.push(request);
      }
    };

    // V fills the waiting places; A, one account, 5 times: take one of V's places and hang up.
    fillAsVictim();
    for (let round = 0; round < 5; round++) {
      const hangUp = new AbortController();
      const attacker = queue.run('acct-a', async () => 'a', hangUp.signal).catch(() => undefined);
      hangUp.abort();
      await attacker;
      fillAsVictim();
    }
    const outcomes = await refusedVictims();
    // A never waited for, nor ran, anything; none of V's requests should have been turned away for it.
    expect(outcomes.filter((outcome) => outcome === '503')).toEqual([]);
    running.resolve();
    await busy;
  });
});

/**
 * Red team (round 15): a held (displaced) waiter whose client leaves stays in its holder's `held` list; when the holder's
 * client then leaves too, the already-refused waiter is pushed back into the queue, later "started", and its place
 * is never freed (local/admissionQueue.ts, `gone` pushes `waiter.held` back without looking whether they settled).
 *
 * What it shows: one place, two waiting places. V waits with two requests; A (waiting with none) takes the place of
 * V's latest (V2 is held by A). V2's client leaves: V2 is refused ClientGoneError. A's client leaves: A's `gone`
 * pushes V2 (settled) back into `waiting`. When the running capture and V1 end, startWaiting picks V2: `take()`
 * counts a running task, `start()` is a no-op on the settled promise, and nothing ever calls `free()`. `total`
 * stays 1 with nothing running: with `shared: 1` every later request waits forever (or is refused 503).
 *
 * Why it matters: any client can leak the local server's capture places one by one by hanging up twice (its own
 * request and the displaced one's client, or two clients of its own in two accounts), until the server runs nothing.
 * A refused waiter is also "started" (a held waiter that starts while also being refused).
 *
 * Fixed: a request set aside whose client leaves is taken out of the requests set aside; no place is given for it
 * (local/admissionQueue.ts).
 */
describe('a displaced waiter whose client leaves before its holder’s does', () => {
  it('is not put back in the queue, and no place leaks', async () => {
    const queue = new AdmissionQueue({ shared: 1, headroom: 0 }, 2);
    const internals = queue as unknown as { total: number; waiting: unknown[] };
    const running = deferred();
    const busy = queue.run('acct-x', () => running.promise);

    const v1 = queue.run('acct-v', async () => 'v1');
    const v2Gone = new AbortController();
    const v2 = queue.run('acct-v', async () => 'v2', v2Gone.signal).catch((error: unknown) => error);

    // A takes V2's place (V2 is held by A), then V2's client leaves, then A's.
    const aGone = new AbortController();
    const a = queue.run('acct-a', async () => 'a', aGone.signal).catch((error: unknown) => error);
    v2Gone.abort();
    expect(await v2).toBeInstanceOf(ClientGoneError);
    aGone.abort();
    expect(await a).toBeInstanceOf(ClientGoneError);

    // Only V1 waits now.
    expect(internals.waiting.length).toBe(1);

    running.resolve();
    await busy;
    expect(await v1).toBe('v1');
    await new Promise((resolve) => setTimeout(resolve, 0));
    // Nothing runs: every place is free.
    expect(internals.total).toBe(0);

    // A later request starts at once.
    expect(await within(queue.run('acct-y', async () => 'y'))).toEqual({ value: 'y' });
  });
});

/**
 * Red team (round 15): a chain of displacement puts the queue past its bound (local/admissionQueue.ts, `gone` of a waiter
 * that is itself held pushes its own held waiters back into `waiting`, though it had no place there to give up).
 *
 * What it shows: one place, four waiting places. A waits with four; B takes A4's place (B1 holds A4), then B2 takes
 * A3's place (B2 holds A3). A1 leaves; C1 waits; D1 comes with the queue full and takes the place of B's latest, B2
 * (D1 holds B2, which still holds A3). B2's client leaves: its `gone` finds itself in no place to give up, yet pushes
 * A3 back in: five waiters in a queue of four.
 *
 * Why it matters: `maxWaiting` is the local server's bound on the requests (and sockets) it keeps waiting; displaced
 * chains let clients that hang up grow it past the bound (each such chain one more), the very thing round 13's fair
 * sharing and round 14's `held` meant to keep fixed.
 *
 * Fixed: requests set aside come back only into places that freed, never past the bound (local/admissionQueue.ts).
 */
describe('a displaced holder whose client leaves', () => {
  it('does not put the queue past its bound', async () => {
    const maxWaiting = 4;
    const queue = new AdmissionQueue({ shared: 1, headroom: 0 }, maxWaiting);
    const waiting = () => (queue as unknown as { waiting: unknown[] }).waiting.length;
    const running = deferred();
    const busy = queue.run('acct-x', () => running.promise);
    const all: Promise<unknown>[] = [busy];
    const request = (account: string, signal?: AbortSignal) => {
      const outcome = queue.run(account, async () => account, signal).catch((error: unknown) => error);
      all.push(outcome);
      return outcome;
    };

    const a1Gone = new AbortController();
    const a1 = request('acct-a', a1Gone.signal);
    request('acct-a');
    request('acct-a');
    request('acct-a');
    request('acct-b'); // takes A4's place
    const b2Gone = new AbortController();
    const b2 = request('acct-b', b2Gone.signal); // takes A3's place
    expect(waiting()).toBe(4);

    a1Gone.abort();
    expect(await a1).toBeInstanceOf(ClientGoneError);
    request('acct-c'); // a free place
    request('acct-d'); // queue full: takes B2's place (B2 holds A3)
    expect(waiting()).toBe(4);

    b2Gone.abort();
    expect(await b2).toBeInstanceOf(ClientGoneError);
    expect(waiting()).toBeLessThanOrEqual(maxWaiting);

    running.resolve();
    await Promise.all(all);
  });
});

/**
 * Red team (round 15): a displaced waiter put back in the queue when its holder's client leaves is not started, though a
 * place it may take is free (local/admissionQueue.ts, `gone` pushes `held` back but never calls startWaiting).
 *
 * What it shows: two shared places and one of headroom (for accounts with nothing running), two waiting places.
 * X and B run one capture each, A1 one on the headroom place; A2 and A3 wait. B2 comes with the queue full and takes
 * A3's place (B2 holds A3). A2's client leaves, then A1 ends: the headroom place is free, but the only waiter, B2,
 * may not take it (B runs one). B2's client leaves: A3 is put back in the queue, and A now runs nothing, so A3 may start at once, yet it
 * waits until some other capture ends (here: forever, since the test never ends X's and B's).
 *
 * Why it matters: startWaiting only runs when a task ends, so every waiter in `waiting` is one that may not start.
 * A waiter pushed back by `gone` breaks that: it waits beside a free place for as long as the longest running
 * capture (with nothing else running it would wait for nothing at all), and a client can cause it at will by taking
 * a place and hanging up.
 *
 * Fixed: a request that leaves the queue lets the requests set aside in, and starts what may start.
 */
describe('a displaced waiter put back in the queue beside a free place', () => {
  it('starts at once', async () => {
    const queue = new AdmissionQueue({ shared: 2, headroom: 1 }, 2);
    const x = deferred();
    const b = deferred();
    const a = deferred();
    void queue.run('acct-x', () => x.promise);
    void queue.run('acct-b', () => b.promise);
    const a1 = queue.run('acct-a', () => a.promise); // the headroom place
    const a2Gone = new AbortController();
    const a2 = queue.run('acct-a', async () => 'a2', a2Gone.signal).catch((error: unknown) => error);
    const a3 = queue.run('acct-a', async () => 'a3').catch((error: unknown) => error);
    const b2Gone = new AbortController();
    const b2 = queue.run('acct-b', async () => 'b2', b2Gone.signal).catch((error: unknown) => error); // holds A3

    a2Gone.abort();
    expect(await a2).toBeInstanceOf(ClientGoneError);
    a.resolve();
    await a1;
    // B2 may not take the free headroom place (B runs one): it still waits.
    expect(await within(b2)).toBe('still waiting');

    b2Gone.abort();
    expect(await b2).toBeInstanceOf(ClientGoneError);
    // A3 is back in the queue and A runs nothing: the free headroom place is its.
    expect(await within(a3)).toEqual({ value: 'a3' });

    x.resolve();
    b.resolve();
  });
});

/**
 * Red team (round 16): a request held aside stays held (and is then refused 503) while a place it may take sits idle and the
 * waiting places it was displaced from are free again (local/admissionQueue.ts, `held` / makeRoomFor).
 *
 * What it shows: one shared place + one of headroom, three waiting places. Account C runs the shared place; account
 * V runs the headroom place and waits with three more requests (every waiting place taken). C sends a request (it
 * must wait: C runs one and the shared place is taken): V waits with two more, so C's request takes the place of V's
 * latest, which is held aside. V's two other waiting requests hang up, and V's running capture ends. Now V runs
 * nothing, the headroom place is free, two of the three waiting places are free, and V's held request may start at
 * once under the rules (an account running nothing gets the headroom). It does not: it stays held, bound to C's
 * request, which cannot start while C's first capture runs. When C's capture ends, C's request starts and V's held
 * request is answered 503, having never been allowed to use the place that was free all along.
 *
 * Why it matters: a held request is only aside because the waiting places were all taken; once they are not, the
 * reason is gone. One account running one long capture (C) keeps another account's request (V's) from running
 * while a place it may use is idle, then gets it refused. Work conservation ("no waiter left waiting while it may
 * start") is broken for held requests, and the headroom place, meant for exactly this account, is wasted.
 *
 * Fixed: a request whose place was taken is set aside, not bound to the one that took it, and takes the first
 * waiting place that frees (local/admissionQueue.ts, `aside`).
 */
describe('a held request, once its waiting place and a running place are free again', () => {
  it('starts on the free place instead of waiting for its holder and being refused', async () => {
    const queue = new AdmissionQueue({ shared: 1, headroom: 1 }, 3);
    const cLong = deferred();
    const cBusy = queue.run('acct-c', () => cLong.promise);
    const vLong = deferred();
    const vBusy = queue.run('acct-v', () => vLong.promise); // the headroom place

    const gone2 = new AbortController();
    const gone3 = new AbortController();
    const v2 = queue.run('acct-v', async () => 'v2', gone2.signal).catch((e: unknown) => e);
    const v3 = queue.run('acct-v', async () => 'v3', gone3.signal).catch((e: unknown) => e);
    let v4Started = false;
    const v4 = queue.run('acct-v', async () => {
      v4Started = true;
      return 'v4';
    });
    const v4Outcome = v4.then(
      (value) => value,
      (error: unknown) => error,
    );

    // C's second request must wait; it takes the place of V's latest (v4), held aside.
    const c2 = queue.run('acct-c', async () => 'c2');

    // V's other waiting requests hang up; V's capture ends: V runs nothing, the headroom place is free.
    gone2.abort();
    gone3.abort();
    await v2;
    await v3;
    vLong.resolve();
    await vBusy;

    // Under the rules v4 may start now (account running nothing, headroom free, waiting places free).
    expect(await within(v4Outcome)).toEqual({ value: 'v4' });
    expect(v4Started).toBe(true);

    cLong.resolve();
    await cBusy;
    expect(await c2).toBe('c2');
  });
});

/**
 * Red team (round 16): a held request that takes its place back goes to the end of the queue, not to the place it had
 * (local/admissionQueue.ts, `leave`: `this.waiting.push(request)`), so an account's requests can start out of order
 * and behind requests that came after them.
 *
 * What it shows: one place (taken), three waiting places, account A waits with a1, a2, a3. B (waiting with none)
 * takes a3's place; then C takes a2's place (A still waits with two more than C). B hangs up: a3 is pushed at
 * the end, behind C; C hangs up: a2 is pushed at the end, behind a3. The queue is a1, a3, a2: a3 (sent after a2)
 * starts first, breaking "the earliest of its requests first" (docs/api.md, fair sharing). Across accounts, a put-back request also
 * lands behind every request that arrived after it, and being last it is the "latest" one taken again by the next
 * displacement, so repeated take-and-hang-up keeps moving the same request to the back.
 *
 * Why it matters: round 14's fix says the held request "takes its place back"; it actually loses its turn, and an
 * account that waits with fewer can push another account's request behind its own later requests at no cost.
 * Low severity (the request is not refused, only delayed), but it is the kind of reordering the fair queue promises
 * not to do.
 *
 * Fixed: every waiter keeps its order of arrival (`seq`), and one set aside goes back by it.
 */
describe('held requests that take their places back', () => {
  it('start in the order they were sent', async () => {
    const queue = new AdmissionQueue({ shared: 1, headroom: 0 }, 3);
    const busy = deferred();
    const running = queue.run('acct-x', () => busy.promise);
    const order: string[] = [];
    const task = (name: string) => async () => {
      order.push(name);
    };

    const a1 = queue.run('acct-a', task('a1'));
    const a2 = queue.run('acct-a', task('a2'));
    const a3 = queue.run('acct-a', task('a3'));

    const leaveB = new AbortController();
    const b = queue.run('acct-b', task('b'), leaveB.signal).catch(() => undefined); // holds a3
    const leaveC = new AbortController();
    const c = queue.run('acct-c', task('c'), leaveC.signal).catch(() => undefined); // holds a2

    leaveB.abort(); // a3 takes its place back: pushed at the end, behind C
    leaveC.abort(); // a2 takes its place back: pushed at the end, behind a3
    await b;
    await c;

    busy.resolve();
    await running;
    await Promise.all([a1, a2, a3]);
    expect(order).toEqual(['a1', 'a2', 'a3']);
  });
});
