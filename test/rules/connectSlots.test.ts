import { describe, expect, it } from 'vitest';
import { ConnectSlots } from '../../shared/egress/connectSlots';

const settledSoon = async <T>(promise: Promise<T>) =>
  Promise.race([
    promise.then(() => 'taken'),
    new Promise((resolve) => setTimeout(() => resolve('waiting'), 20)),
  ]);

describe('ConnectSlots', () => {
  it('gives at most its size at once, then passes each freed slot to the longest waiter', async () => {
    const slots = new ConnectSlots(2);
    const signal = new AbortController().signal;
    const held = [await slots.take(signal), await slots.take(signal)];
    const third = slots.take(signal);
    const fourth = slots.take(signal);
    expect(await settledSoon(third)).toBe('waiting');
    held[0]?.();
    held[0]?.(); // a second release of the same slot frees nothing more
    expect(await settledSoon(third)).toBe('taken');
    expect(await settledSoon(fourth)).toBe('waiting');
    held[1]?.();
    expect(await settledSoon(fourth)).toBe('taken');
  });

  it('drops a waiter whose signal aborts, which then holds no slot', async () => {
    const slots = new ConnectSlots(1);
    const release = await slots.take(new AbortController().signal);
    const leaving = new AbortController();
    const left = slots.take(leaving.signal);
    const staying = slots.take(new AbortController().signal);
    leaving.abort(new Error('client gone'));
    await expect(left).rejects.toThrow('client gone');
    release();
    expect(await settledSoon(staying)).toBe('taken');
  });

  it('refuses at once when the signal has already aborted', async () => {
    const stopped = new AbortController();
    stopped.abort(new Error('closed'));
    await expect(new ConnectSlots(1).take(stopped.signal)).rejects.toThrow('closed');
  });
});
