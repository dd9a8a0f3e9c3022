import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { HeavyEvent } from '../../shared/capture/devtoolsMessageCap';
import {
  guardPageTraffic,
  TOO_MANY_FRAMES,
  TOO_MANY_MESSAGES,
  TOO_MANY_REQUESTS,
  TOO_MUCH_REPORTED,
  type TrafficSource,
} from '../../shared/capture/pageTrafficGuard';

/**
 * The guard's counting on a stand-in page that emits `request`, `workercreated` and `frameattached` as puppeteer's
 * does, each request and worker with the DevTools session it belongs to, and our session's child-frame navigations;
 * the real page is in hostileDevtoolsTraffic.test.ts.
 */
function standInPage() {
  const page = new EventEmitter();
  const pageSession = Object.assign(new EventEmitter(), { id: (): string => 'PAGE' });
  const workerSession = Object.assign(new EventEmitter(), { id: (): string => 'WORKER' });
  const childNavigations = new EventEmitter();
  const pipe = new EventEmitter();
  const control = {
    onChildNavigation: (listener: () => void) => {
      childNavigations.on('started', listener);
      return () => childNavigations.off('started', listener);
    },
  };
  return {
    page: {
      page,
      control,
      heavyEvents: (listener: (event: HeavyEvent) => void) => {
        pipe.on('heavy', listener);
        return () => pipe.off('heavy', listener);
      },
    } as unknown as TrafficSource,
    /** A heavy event the DevTools pipe read. */
    heavy: (event: HeavyEvent) => pipe.emit('heavy', event),
    request: () => page.emit('request', { client: pageSession }),
    startWorker: () => page.emit('workercreated', { client: workerSession }),
    frame: (session = pageSession) => session.emit('Network.webSocketFrameReceived', {}),
    eventSourceMessage: (session = pageSession) => session.emit('Network.eventSourceMessageReceived', {}),
    attachFrame: () => page.emit('frameattached', {}),
    loadInFrame: () => childNavigations.emit('started'),
    listeners: () =>
      [page, pageSession, workerSession, childNavigations, pipe].reduce(
        (sum, emitter) => sum + emitter.eventNames().reduce((n, name) => n + emitter.listenerCount(name), 0),
        0,
      ),
    workerSession,
  };
}

/** Small budgets, refilled 2 a second: the stand-in's clock is faked where refills matter. */
const LIMITS = {
  requests: { burst: 5, perSecond: 2 },
  eventBytes: { burst: 100, perSecond: 10 },
  messages: { burst: 8, perSecond: 2 },
  frames: { burst: 4, perSecond: 2 },
};

afterEach(() => {
  vi.useRealTimers();
});

describe('guardPageTraffic', () => {
  it('lets a page spend each burst at once', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const page = standInPage();
    const exceeded = vi.fn();
    guardPageTraffic(page.page, LIMITS, exceeded);
    for (let i = 0; i < 5; i++) page.request();
    for (let i = 0; i < 4; i++) page.frame();
    for (let i = 0; i < 4; i++) page.eventSourceMessage();
    for (let i = 0; i < 2; i++) page.attachFrame();
    for (let i = 0; i < 2; i++) page.loadInFrame();
    expect(exceeded).not.toHaveBeenCalled();
  });

  it('is told once, at the first request past the burst, and stops listening', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const page = standInPage();
    const exceeded = vi.fn();
    guardPageTraffic(page.page, LIMITS, exceeded);
    for (let i = 0; i < 9; i++) page.request();
    expect(exceeded).toHaveBeenCalledTimes(1);
    expect(exceeded).toHaveBeenCalledWith(TOO_MANY_REQUESTS);
    expect(page.listeners()).toBe(0);
  });

  it("counts WebSocket frames and EventSource messages on the sessions of the page's requests and workers", () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const page = standInPage();
    const exceeded = vi.fn();
    guardPageTraffic(page.page, LIMITS, exceeded);
    page.request();
    page.startWorker();
    for (let i = 0; i < 3; i++) page.frame();
    for (let i = 0; i < 3; i++) page.eventSourceMessage();
    for (let i = 0; i < 2; i++) page.frame(page.workerSession);
    expect(exceeded).not.toHaveBeenCalled();
    page.frame(page.workerSession);
    expect(exceeded).toHaveBeenCalledWith(TOO_MANY_MESSAGES);
    expect(page.listeners()).toBe(0);
  });

  it("counts the bytes of heavy events on the page's sessions only, delivered or dropped, whatever they are", () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const page = standInPage();
    const exceeded = vi.fn();
    guardPageTraffic(page.page, LIMITS, exceeded);
    // Before its first request, the page's session is not known yet.
    page.heavy({ method: 'Network.requestWillBeSent', sessionId: 'PAGE', bytes: 500 });
    expect(exceeded).not.toHaveBeenCalled();
    page.request();
    page.heavy({ method: 'Log.entryAdded', sessionId: 'PAGE', bytes: 40 });
    page.heavy({ method: 'Network.requestWillBeSent', sessionId: 'ANOTHER', bytes: 500 });
    page.heavy({ method: 'Network.requestWillBeSent', bytes: 500 });
    page.startWorker();
    page.heavy({ method: 'Network.requestWillBeSent', sessionId: 'WORKER', bytes: 40, dropped: true });
    expect(exceeded).not.toHaveBeenCalled();
    page.heavy({ method: 'Audits.issueAdded', sessionId: 'PAGE', bytes: 21 });
    expect(exceeded).toHaveBeenCalledWith(TOO_MUCH_REPORTED);
  });

  it('counts frames attached and the navigations started in them', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const page = standInPage();
    const exceeded = vi.fn();
    guardPageTraffic(page.page, LIMITS, exceeded);
    page.attachFrame();
    for (let i = 0; i < 3; i++) page.loadInFrame();
    expect(exceeded).not.toHaveBeenCalled();
    page.loadInFrame();
    expect(exceeded).toHaveBeenCalledWith(TOO_MANY_FRAMES);
  });

  it('refills each budget at its rate: a page within it is never stopped, one above it is', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const within = standInPage();
    const above = standInPage();
    const withinExceeded = vi.fn();
    const aboveExceeded = vi.fn();
    guardPageTraffic(within.page, LIMITS, withinExceeded);
    guardPageTraffic(above.page, LIMITS, aboveExceeded);
    for (let second = 0; second < 10; second++) {
      for (let i = 0; i < 2; i++) within.request();
      for (let i = 0; i < 3; i++) above.request();
      vi.advanceTimersByTime(1_000);
    }
    expect(withinExceeded).not.toHaveBeenCalled();
    expect(aboveExceeded).toHaveBeenCalledWith(TOO_MANY_REQUESTS);
  });

  it('hears nothing once stopped', () => {
    const page = standInPage();
    const exceeded = vi.fn();
    const one = { burst: 1, perSecond: 0 };
    const guard = guardPageTraffic(
      page.page,
      { requests: one, eventBytes: one, messages: one, frames: one },
      exceeded,
    );
    page.request();
    page.startWorker();
    guard.stop();
    page.request();
    page.frame();
    page.frame();
    page.attachFrame();
    page.attachFrame();
    page.heavy({ sessionId: 'PAGE', bytes: 5 });
    expect(exceeded).not.toHaveBeenCalled();
    expect(page.listeners()).toBe(0);
  });
});
