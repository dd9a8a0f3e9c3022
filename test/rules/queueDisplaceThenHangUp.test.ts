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
 * Fixed: the displaced waiter is kept aside, bound to the request that took its place: refused (503) once that one
 * starts or is refused itself, back in the queue if its client leaves first (local/admissionQueue.ts, `held`).
 *
 * Real parts: the local queue itself (AdmissionQueue), driven as the local server drives it (an AbortSignal per
 * request, as captureScreenshot passes the client's).
 */
import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import { ClientGoneError, OverloadedError } from '../../shared/errors';
import { deferred } from '../helpers/deferred';

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
