import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { guardRequestRate, type RequestSource } from '../../shared/capture/pageRequestGuard';

/** The guard's counting on a stand-in page that emits `request` as puppeteer's does; the real page is in hostileDevtoolsTraffic.test.ts. */
function standInPage() {
  const emitter = new EventEmitter();
  return { page: emitter as unknown as RequestSource, request: () => emitter.emit('request'), emitter };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('guardRequestRate', () => {
  it('lets a second hold as many requests as the limit', () => {
    const { page, request } = standInPage();
    const exceeded = vi.fn();
    guardRequestRate(page, 5, exceeded);
    for (let i = 0; i < 5; i++) request();
    expect(exceeded).not.toHaveBeenCalled();
  });

  it('is told once, at the first request past the limit, and stops listening', () => {
    const { page, request, emitter } = standInPage();
    const exceeded = vi.fn();
    guardRequestRate(page, 5, exceeded);
    for (let i = 0; i < 9; i++) request();
    expect(exceeded).toHaveBeenCalledTimes(1);
    expect(emitter.listenerCount('request')).toBe(0);
  });

  it('counts each second afresh', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const { page, request } = standInPage();
    const exceeded = vi.fn();
    guardRequestRate(page, 5, exceeded);
    for (let second = 0; second < 4; second++) {
      for (let i = 0; i < 5; i++) request();
      vi.advanceTimersByTime(1_000);
    }
    expect(exceeded).not.toHaveBeenCalled();
  });

  it('hears nothing once stopped', () => {
    const { page, request, emitter } = standInPage();
    const exceeded = vi.fn();
    guardRequestRate(page, 1, exceeded).stop();
    request();
    request();
    expect(exceeded).not.toHaveBeenCalled();
    expect(emitter.listenerCount('request')).toBe(0);
  });
});
