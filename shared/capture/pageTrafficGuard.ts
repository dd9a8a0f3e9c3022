import type { CDPSession, HTTPRequest, Page, WebWorker } from 'puppeteer-core';
import type { HeavyEvent } from './devtoolsMessageCap';
import type { PageControl } from './pageControl';

/**
 * What a capture's page may do without a request of ours being slowed: each limit is a burst it may spend at once
 * and a rate that refills it. Each request, WebSocket frame, EventSource message or frame document is DevTools traffic
 * in the pipe every capture of a browser shares, and work for the browser process: floods of each held another
 * account's capture beside them for seconds and made it fail (red team, rounds 8, 12, 17 and 18).
 */
export interface TrafficLimit {
  burst: number;
  perSecond: number;
}

/**
 * Requests of the page, its frames and workers. A real page may ask for a thousand images at once (or a few hundred
 * more as a full page scrolls); none keeps asking for a hundred a second: 1,000 a second to its own origin failed a
 * capture beside it (red team, round 18), and on a loaded machine such a flood gets out only a few hundred a second,
 * still too many.
 */
export const REQUEST_LIMIT: TrafficLimit = { burst: 1_200, perSecond: 100 };

/**
 * Bytes of the heavy DevTools events of the page's sessions (HEAVY_EVENT_BYTES and more, devtoolsMessageCap.ts), which
 * the renderer process reads and parses from the pipe every capture of the browser shares: what a page makes them
 * carry, it chooses. Ten 8 MB bodies a second of control characters (48 MB events) held another account's capture
 * beside them for 11 to 16 s (red team, round 17), and a hundred requests a second for 2 MB URLs (four 2 MB events each
 * when they fail) for 15 s (session 23). A page being captured sends beacons and form posts of kilobytes, session
 * recorders a few hundred kilobytes at a time, inline images and fonts as `data:` URLs of a few hundred kilobytes; an
 * upload of three 6 MB files of text at once (42 MB of events) passes (red team, round 19).
 */
export const EVENT_BYTES_LIMIT: TrafficLimit = { burst: 48 * 2 ** 20, perSecond: 4 * 2 ** 20 };

/**
 * WebSocket frames (either way) and EventSource messages. Chromium's cost of reporting them is its own (dropping
 * them before puppeteer parsed them changed nothing); live dashboards and tickers pass tens to hundreds a second.
 */
export const MESSAGE_LIMIT: TrafficLimit = { burst: 5_000, perSecond: 2_500 };

/**
 * Frames attached, and navigations started in the page's frames: a `srcdoc` or `about:blank` document needs no
 * request, yet each is a document the browser process commits. Attaching 50 `srcdoc` frames every 5 ms, or giving 50
 * frames a new `srcdoc` every 5 ms, failed a capture beside it (red team, rounds 17 and 18). Real pages have a few
 * dozen frames, each with one or two documents.
 */
export const FRAME_LIMIT: TrafficLimit = { burst: 500, perSecond: 100 };

/** Told to the customer when the page passed a limit. */
export const TOO_MANY_REQUESTS = 'The page kept starting requests faster than any page needs';
export const TOO_MUCH_REPORTED =
  'The page kept sending requests (URLs, headers or bodies) or messages larger than any page needs';
export const TOO_MANY_MESSAGES =
  'The page kept sending or receiving WebSocket or EventSource messages faster than any page needs';
export const TOO_MANY_FRAMES = 'The page kept attaching or loading frames faster than any page needs';

/** The DevTools events of one message, on the session of the page or worker it belongs to. */
const MESSAGE_EVENTS = [
  'Network.webSocketFrameSent',
  'Network.webSocketFrameReceived',
  'Network.eventSourceMessageReceived',
] as const;

export interface TrafficLimits {
  requests: TrafficLimit;
  eventBytes: TrafficLimit;
  messages: TrafficLimit;
  frames: TrafficLimit;
}

export const PAGE_TRAFFIC_LIMITS: TrafficLimits = {
  requests: REQUEST_LIMIT,
  eventBytes: EVENT_BYTES_LIMIT,
  messages: MESSAGE_LIMIT,
  frames: FRAME_LIMIT,
};

export interface TrafficGuard {
  stop(): void;
}

/**
 * The page, as far as the guard hears it: puppeteer's, our own session on it (PageControl), and the heavy events of
 * its browser, as the DevTools pipe reads them (onHeavyEvent in devtoolsMessageCap.ts).
 */
export interface TrafficSource {
  page: Pick<Page, 'on' | 'off'>;
  control: Pick<PageControl, 'onChildNavigation'>;
  heavyEvents: (listener: (event: HeavyEvent) => void) => () => void;
}

/** What the guard hears on a session: its events by name, and its id, which names it in the pipe. */
type MessageSession = Pick<CDPSession, 'on' | 'off' | 'id'>;

/**
 * Counts the requests puppeteer reports for the page, the messages and the bytes of heavy events on the DevTools
 * sessions they (and the page's workers) belong to, and the frames it attaches and their documents, and
 * calls `exceeded` once, with what to tell the customer, at the first past a limit; the caller ends the capture, and
 * closing its context ends the flood.
 */
export function guardPageTraffic(
  { page, control, heavyEvents }: TrafficSource,
  limits: TrafficLimits,
  exceeded: (reason: string) => void,
): TrafficGuard {
  const sessions = new Set<MessageSession>();
  const passed = (reason: string) => () => {
    stop();
    exceeded(reason);
  };
  const spendMessage = spending(limits.messages, passed(TOO_MANY_MESSAGES));
  const spendRequest = spending(limits.requests, passed(TOO_MANY_REQUESTS));
  const spendBytes = spending(limits.eventBytes, passed(TOO_MUCH_REPORTED));
  const spendFrame = spending(limits.frames, passed(TOO_MANY_FRAMES));
  // Listeners, which puppeteer calls with its event: each is one.
  const message = () => spendMessage(1);
  const frame = () => spendFrame(1);
  // Navigations started in child frames; the main frame's are the page's own, which need requests or are held.
  const stopFrameNavigations = control.onChildNavigation(frame);
  const watch = (session: MessageSession) => {
    if (sessions.has(session)) return;
    sessions.add(session);
    for (const event of MESSAGE_EVENTS) session.on(event, message);
  };
  const onRequest = (request: HTTPRequest) => {
    watch(request.client);
    spendRequest(1);
  };
  const onWorker = (worker: WebWorker) => watch(worker.client);
  // On one of the page's sessions, which its earlier requests (its document's first) or its workers made known.
  const stopHeavy = heavyEvents(({ sessionId, bytes }) => {
    if ([...sessions].some((session) => session.id() === sessionId)) spendBytes(bytes);
  });
  function stop() {
    stopHeavy();
    page.off('request', onRequest);
    page.off('workercreated', onWorker);
    page.off('frameattached', frame);
    stopFrameNavigations();
    for (const session of sessions) for (const event of MESSAGE_EVENTS) session.off(event, message);
  }
  page.on('request', onRequest);
  page.on('workercreated', onWorker);
  page.on('frameattached', frame);
  return { stop };
}

/**
 * A budget of `limit.burst` refilled at `limit.perSecond`, which calls `passed` once, at the first spending it has
 * no room for.
 */
function spending(limit: TrafficLimit, passed: () => void): (amount: number) => void {
  let left = limit.burst;
  let at = performance.now();
  let spent = false;
  return (amount) => {
    const now = performance.now();
    left = Math.min(limit.burst, left + ((now - at) / 1_000) * limit.perSecond) - amount;
    at = now;
    if (left < 0 && !spent) {
      spent = true;
      passed();
    }
  };
}
