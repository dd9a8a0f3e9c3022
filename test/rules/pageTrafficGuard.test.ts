import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  guardPageTraffic,
  TOO_MANY_FRAMES,
  TOO_MANY_MESSAGES,
  TOO_MANY_REQUESTS,
  type TrafficSource,
} from '../../shared/capture/pageTrafficGuard';

/**
 * The guard's counting on a stand-in page that emits `request` and `workercreated` as puppeteer's does, each with
 * the DevTools session it belongs to; the real page is in hostileDevtoolsTraffic.test.ts.
 */
function standInPage() {
  const page = new EventEmitter();
  const pageSession = new EventEmitter();
  const workerSession = new EventEmitter();
  return {
    page: page as unknown as TrafficSource,
    request: () => page.emit('request', { client: pageSession }),
    startWorker: () => page.emit('workercreated', { client: workerSession }),
    frame: (session = pageSession) => session.emit('Network.webSocketFrameReceived', {}),
    eventSourceMessage: (session = pageSession) => session.emit('Network.eventSourceMessageReceived', {}),
    attachFrame: () => page.emit('frameattached', {}),
    listeners: () =>
      [page, pageSession, workerSession].reduce(
        (sum, session) => sum + session.eventNames().reduce((n, name) => n + session.listenerCount(name), 0),
        0,
      ),
    workerSession,
  };
}

const LIMITS = { requestsPerSecond: 5, messagesPerSecond: 8, framesPerSecond: 4 };

afterEach(() => {
  vi.useRealTimers();
});

describe('guardPageTraffic', () => {
  it('lets a second hold as many requests and messages as the limits', () => {
    const page = standInPage();
    const exceeded = vi.fn();
    guardPageTraffic(page.page, LIMITS, exceeded);
    for (let i = 0; i < 5; i++) page.request();
    for (let i = 0; i < 4; i++) page.frame();
    for (let i = 0; i < 4; i++) page.eventSourceMessage();
    expect(exceeded).not.toHaveBeenCalled();
  });

  it('is told once, at the first request past the limit, and stops listening', () => {
    const page = standInPage();
    const exceeded = vi.fn();
    guardPageTraffic(page.page, LIMITS, exceeded);
    for (let i = 0; i < 9; i++) page.request();
    expect(exceeded).toHaveBeenCalledTimes(1);
    expect(exceeded).toHaveBeenCalledWith(TOO_MANY_REQUESTS);
    expect(page.listeners()).toBe(0);
  });

  it("counts WebSocket frames and EventSource messages on the sessions of the page's requests and workers", () => {
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
    expect(exceeded).toHaveBeenCalledTimes(1);
    expect(exceeded).toHaveBeenCalledWith(TOO_MANY_MESSAGES);
    expect(page.listeners()).toBe(0);
  });

  it('counts the frames the page attaches', () => {
    const page = standInPage();
    const exceeded = vi.fn();
    guardPageTraffic(page.page, LIMITS, exceeded);
    for (let i = 0; i < 4; i++) page.attachFrame();
    expect(exceeded).not.toHaveBeenCalled();
    page.attachFrame();
    expect(exceeded).toHaveBeenCalledWith(TOO_MANY_FRAMES);
    expect(page.listeners()).toBe(0);
  });

  it('counts each second afresh', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const page = standInPage();
    const exceeded = vi.fn();
    guardPageTraffic(page.page, LIMITS, exceeded);
    for (let second = 0; second < 4; second++) {
      for (let i = 0; i < 5; i++) page.request();
      for (let i = 0; i < 8; i++) page.frame();
      for (let i = 0; i < 4; i++) page.attachFrame();
      vi.advanceTimersByTime(1_000);
    }
    expect(exceeded).not.toHaveBeenCalled();
  });

  it('hears nothing once stopped', () => {
    const page = standInPage();
    const exceeded = vi.fn();
    const guard = guardPageTraffic(
      page.page,
      { requestsPerSecond: 1, messagesPerSecond: 1, framesPerSecond: 1 },
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
