import type { CDPSession, HTTPRequest, Page, WebWorker } from 'puppeteer-core';

/**
 * How many requests a capture's page (its frames and workers) may start within one second. Each one is several
 * DevTools events in the pipe that every capture of a browser shares, even a `data:` fetch that never leaves the
 * renderer: a page that fetched in a loop slowed another account's 0.2 s capture beside it to 7 to 32 s (red team).
 * Measured here, 1,700 a second for seconds cost a capture beside it 0.1 s; the heaviest real pages start a few
 * hundred requests, spread over seconds.
 */
export const MAX_REQUESTS_PER_SECOND = 2_000;

/**
 * How many WebSocket frames (either way) and EventSource messages a capture's page may pass within one second. Each
 * is a DevTools event too, and Chromium's cost of reporting them is its own (dropping them before puppeteer parsed
 * them changed nothing): four sockets and an EventSource flooded with one-byte messages held another account's
 * capture beside them for 10 s and its own context past its budget (red team, round 12). Live dashboards and
 * tickers send tens to hundreds a second.
 */
export const MAX_MESSAGES_PER_SECOND = 5_000;

/**
 * How many frames a capture's page may attach within one second. A frame's document may need no request (`srcdoc`,
 * `about:blank` written to), yet each is a document the browser process commits: a page that attached 50 `srcdoc`
 * frames every 5 ms (and removed the previous 50) kept the browser so busy that its context did not close in time
 * and another account's capture beside it failed (red team, round 17; about 200 a second got through). Real pages
 * attach a few dozen frames in all.
 */
export const MAX_FRAMES_PER_SECOND = 200;

/** Told to the customer when the page passed a limit. */
export const TOO_MANY_REQUESTS = `The page started more than ${MAX_REQUESTS_PER_SECOND.toLocaleString('en-US')} requests within a second`;
export const TOO_MANY_MESSAGES = `The page sent or received more than ${MAX_MESSAGES_PER_SECOND.toLocaleString('en-US')} WebSocket or EventSource messages within a second`;
export const TOO_MANY_FRAMES = `The page attached more than ${MAX_FRAMES_PER_SECOND} frames within a second`;

/** The DevTools events of one message, on the session of the page or worker it belongs to. */
const MESSAGE_EVENTS = [
  'Network.webSocketFrameSent',
  'Network.webSocketFrameReceived',
  'Network.eventSourceMessageReceived',
] as const;

export interface TrafficLimits {
  requestsPerSecond: number;
  messagesPerSecond: number;
  framesPerSecond: number;
}

export const PAGE_TRAFFIC_LIMITS: TrafficLimits = {
  requestsPerSecond: MAX_REQUESTS_PER_SECOND,
  messagesPerSecond: MAX_MESSAGES_PER_SECOND,
  framesPerSecond: MAX_FRAMES_PER_SECOND,
};

export interface TrafficGuard {
  stop(): void;
}

/** The page, as far as the guard hears it. */
export type TrafficSource = Pick<Page, 'on' | 'off'>;

/** What the guard hears on a session: its events by name. */
type MessageSession = Pick<CDPSession, 'on' | 'off'>;

/**
 * Counts the requests puppeteer reports for the page, the messages on the DevTools sessions they (and the page's
 * workers) belong to, and the frames it attaches, and calls `exceeded` once,
 * with what to tell the customer, at the first past a limit; the caller ends the capture, and closing its context
 * ends the flood. Counted in whole seconds from an event: a burst across two of them may reach twice the rate, still
 * far from what real pages do.
 */
export function guardPageTraffic(
  page: TrafficSource,
  limits: TrafficLimits,
  exceeded: (reason: string) => void,
): TrafficGuard {
  const sessions = new Set<MessageSession>();
  const passed = (reason: string) => () => {
    stop();
    exceeded(reason);
  };
  const message = perSecond(limits.messagesPerSecond, passed(TOO_MANY_MESSAGES));
  const countRequest = perSecond(limits.requestsPerSecond, passed(TOO_MANY_REQUESTS));
  const frame = perSecond(limits.framesPerSecond, passed(TOO_MANY_FRAMES));
  const watch = (session: MessageSession) => {
    if (sessions.has(session)) return;
    sessions.add(session);
    for (const event of MESSAGE_EVENTS) session.on(event, message);
  };
  const onRequest = (request: HTTPRequest) => {
    watch(request.client);
    countRequest();
  };
  const onWorker = (worker: WebWorker) => watch(worker.client);
  function stop() {
    page.off('request', onRequest);
    page.off('workercreated', onWorker);
    page.off('frameattached', frame);
    for (const session of sessions) for (const event of MESSAGE_EVENTS) session.off(event, message);
  }
  page.on('request', onRequest);
  page.on('workercreated', onWorker);
  page.on('frameattached', frame);
  return { stop };
}

/** A counter of events per whole second from the first of it, which calls `passed` once the count passes `limit`. */
function perSecond(limit: number, passed: () => void): () => void {
  let secondStart = Number.NEGATIVE_INFINITY;
  let inSecond = 0;
  return () => {
    const now = performance.now();
    if (now - secondStart >= 1_000) {
      secondStart = now;
      inSecond = 0;
    }
    inSecond += 1;
    if (inSecond === limit + 1) passed();
  };
}
