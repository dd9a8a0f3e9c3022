import type { CDPSession, HTTPRequest, Page, WebWorker } from 'puppeteer-core';
import { JSON_ESCAPED_LENGTH } from '../jsonEscapes';
import type { DroppedEvent } from './devtoolsMessageCap';
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
 * Bytes of what the page puts in its requests, as their DevTools events carry them (requestEventBytes). Each request
 * reaches the renderer process as events it parses: ten 8 MB bodies a second of control characters (48 MB events) held
 * another account's capture beside them for 11 to 16 s (red team, round 17), and a hundred requests a second for 2 MB
 * URLs (four 2 MB events each when they fail) for 15.6 s (session 23). A page being captured sends beacons and form
 * posts of kilobytes; session recorders send a few hundred kilobytes at a time; an upload of three 6 MB files of text
 * at once passes (red team, round 19). An event too large for the pipe to pass on (devtoolsMessageCap.ts) never
 * reaches puppeteer as a request: its bytes count instead.
 */
export const REQUEST_BYTES_LIMIT: TrafficLimit = { burst: 48 * 2 ** 20, perSecond: 4 * 2 ** 20 };

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
export const TOO_MUCH_SENT =
  'The page kept sending requests (URLs, headers or bodies) larger than any page needs';
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
  requestBytes: TrafficLimit;
  messages: TrafficLimit;
  frames: TrafficLimit;
}

export const PAGE_TRAFFIC_LIMITS: TrafficLimits = {
  requests: REQUEST_LIMIT,
  requestBytes: REQUEST_BYTES_LIMIT,
  messages: MESSAGE_LIMIT,
  frames: FRAME_LIMIT,
};

export interface TrafficGuard {
  stop(): void;
}

/**
 * The page, as far as the guard hears it: puppeteer's, our own session on it (PageControl), and the events of its
 * browser that the DevTools pipe dropped as too large (onDroppedEvent in devtoolsMessageCap.ts).
 */
export interface TrafficSource {
  page: Pick<Page, 'on' | 'off'>;
  control: Pick<PageControl, 'onChildNavigation'>;
  droppedEvents: (listener: (event: DroppedEvent) => void) => () => void;
}

/** What the guard hears on a session: its events by name, and its id, which names it in the pipe. */
type MessageSession = Pick<CDPSession, 'on' | 'off' | 'id'>;

/**
 * Counts the requests puppeteer reports for the page and the bytes they put in their events, the messages on the
 * DevTools sessions they (and the page's workers) belong to, and the frames it attaches and their documents, and
 * calls `exceeded` once, with what to tell the customer, at the first past a limit; the caller ends the capture, and
 * closing its context ends the flood.
 */
export function guardPageTraffic(
  { page, control, droppedEvents }: TrafficSource,
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
  const spendBytes = spending(limits.requestBytes, passed(TOO_MUCH_SENT));
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
    spendBytes(requestEventBytes(request));
  };
  const onWorker = (worker: WebWorker) => watch(worker.client);
  // A request whose event was too large to read: on one of the page's sessions, which its earlier requests (its
  // document's first) or its workers made known.
  const stopDropped = droppedEvents(({ method, sessionId, bytes }) => {
    if (method !== 'Network.requestWillBeSent') return;
    if ([...sessions].some((session) => session.id() === sessionId)) spendBytes(bytes);
  });
  function stop() {
    stopDropped();
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
 * The bytes a request puts in the DevTools events about it: its body (bodyEventBytes), its headers twice (the request
 * and its extra information), and its URL up to four times (the request, then, for one that fails, an issue and two
 * log entries, measured; a `data:` URL twice). The URL of the document that asked for it rides along too, but that is
 * the customer's: an `html` capture's document is a `data:` URL of up to 1.4 MB (see Known limits in
 * docs/reliability.md).
 */
export function requestEventBytes(request: Pick<HTTPRequest, 'url' | 'headers' | 'postData'>): number {
  let headers = 0;
  for (const [name, value] of Object.entries(request.headers())) headers += name.length + value.length;
  const body = request.postData();
  // A `data:` URL (an inline image or font) cannot fail on the network: it comes in the request and its response.
  const url = request.url();
  return (url.startsWith('data:') ? 2 : 4) * url.length + 2 * headers + (body ? bodyEventBytes(body) : 0);
}

/**
 * The bytes a body adds to its DevTools event: Chromium sends it twice, as JSON text (`postData`, where a control or
 * non-ASCII character is six bytes, `\u00e9`) and as base64 of its bytes (`postDataEntries`). A body of 100,000 CJK
 * characters is a 1 MB event (test/reliability/requestBodyEventBytes.test.ts). A body that is not UTF-8 comes as one
 * character per byte, which this counts a little high (8.7 bytes for each above 0x7f, which costs 7.3).
 */
export function bodyEventBytes(body: string): number {
  let text = 0;
  // Chromium writes each UTF-16 unit beyond ASCII as `\uXXXX`.
  for (let i = 0; i < body.length; i++) text += JSON_ESCAPED_LENGTH[body.charCodeAt(i)] ?? 6;
  return text + Math.ceil(Buffer.byteLength(body) / 3) * 4;
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
