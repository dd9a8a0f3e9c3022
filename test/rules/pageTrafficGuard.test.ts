import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DroppedEvent } from '../../shared/capture/devtoolsMessageCap';
import {
  bodyEventBytes,
  guardPageTraffic,
  TOO_MANY_FRAMES,
  TOO_MANY_MESSAGES,
  TOO_MANY_REQUESTS,
  TOO_MUCH_SENT,
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
      droppedEvents: (listener: (event: DroppedEvent) => void) => {
        pipe.on('dropped', listener);
        return () => pipe.off('dropped', listener);
      },
    } as unknown as TrafficSource,
    /** An event the DevTools pipe dropped as too large. */
    dropped: (event: DroppedEvent) => pipe.emit('dropped', event),
    request: (body?: string, url = '', headers: Record<string, string> = {}) =>
      page.emit('request', {
        client: pageSession,
        postData: () => body,
        url: () => url,
        headers: () => headers,
      }),
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
  requestBytes: { burst: 100, perSecond: 10 },
  messages: { burst: 8, perSecond: 2 },
  frames: { burst: 4, perSecond: 2 },
};

afterEach(() => {
  vi.useRealTimers();
});

/** A stand-in page guarded with LIMITS, on a clock the test moves, and the guard's callback. */
function guardedPage() {
  vi.useFakeTimers({ toFake: ['performance'] });
  const page = standInPage();
  const exceeded = vi.fn();
  guardPageTraffic(page.page, LIMITS, exceeded);
  return { page, exceeded };
}

describe('guardPageTraffic', () => {
  it('lets a page spend each burst at once', () => {
    const { page, exceeded } = guardedPage();
    for (let i = 0; i < 5; i++) page.request();
    for (let i = 0; i < 4; i++) page.frame();
    for (let i = 0; i < 4; i++) page.eventSourceMessage();
    for (let i = 0; i < 2; i++) page.attachFrame();
    for (let i = 0; i < 2; i++) page.loadInFrame();
    expect(exceeded).not.toHaveBeenCalled();
  });

  it('is told once, at the first request past the burst, and stops listening', () => {
    const { page, exceeded } = guardedPage();
    for (let i = 0; i < 9; i++) page.request();
    expect(exceeded).toHaveBeenCalledTimes(1);
    expect(exceeded).toHaveBeenCalledWith(TOO_MANY_REQUESTS);
    expect(page.listeners()).toBe(0);
  });

  it("counts WebSocket frames and EventSource messages on the sessions of the page's requests and workers", () => {
    const { page, exceeded } = guardedPage();
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

  it('counts the bytes request bodies add to their events', () => {
    const { page, exceeded } = guardedPage();
    page.request('x'.repeat(30));
    page.request();
    page.request('x'.repeat(12));
    expect(exceeded).not.toHaveBeenCalled();
    page.request('x');
    expect(exceeded).toHaveBeenCalledWith(TOO_MUCH_SENT);
  });

  it('counts a URL four times and headers twice, as a failed request carries them', () => {
    const { page, exceeded } = guardedPage();
    page.request(undefined, 'u'.repeat(20));
    page.request(undefined, '', { a: 'bcdefghi' });
    expect(exceeded).not.toHaveBeenCalled();
    page.request(undefined, '', { ab: '' });
    expect(exceeded).toHaveBeenCalledWith(TOO_MUCH_SENT);
  });

  it.each([
    ['ASCII', 'ab', 2 + 4],
    ['a delete character', '\x7f', 1 + 4],
    ['quotes, backslashes and line breaks', '"\\\n', 2 + 2 + 2 + 4],
    ['a control character', '\x01', 6 + 4],
    ['an accented letter', 'é', 6 + 4],
    ['a CJK character', '漢', 6 + 4],
    ['an emoji (two UTF-16 units)', '😀', 12 + 8],
  ])('counts %s as its JSON text plus the base64 of its bytes', (_, body, bytes) => {
    expect(bodyEventBytes(body)).toBe(bytes);
  });

  it("counts the bytes of a request event too large for the pipe, on the page's sessions only", () => {
    const { page, exceeded } = guardedPage();
    page.dropped({ method: 'Network.requestWillBeSent', sessionId: 'PAGE', bytes: 500 });
    expect(exceeded).not.toHaveBeenCalled();
    page.request();
    page.dropped({ method: 'Runtime.consoleAPICalled', sessionId: 'PAGE', bytes: 500 });
    page.dropped({ method: 'Network.requestWillBeSent', sessionId: 'ANOTHER', bytes: 500 });
    page.dropped({ method: 'Network.requestWillBeSent', bytes: 500 });
    expect(exceeded).not.toHaveBeenCalled();
    page.dropped({ method: 'Network.requestWillBeSent', sessionId: 'PAGE', bytes: 101 });
    expect(exceeded).toHaveBeenCalledWith(TOO_MUCH_SENT);
  });

  it('counts frames attached and the navigations started in them', () => {
    const { page, exceeded } = guardedPage();
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
      { requests: one, requestBytes: one, messages: one, frames: one },
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
    expect(exceeded).not.toHaveBeenCalled();
    expect(page.listeners()).toBe(0);
  });
});
