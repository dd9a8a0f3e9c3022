import type { Frame, HTTPRequest, Page } from 'puppeteer-core';

type Initiator = NonNullable<ReturnType<HTTPRequest['initiator']>>;
type StackTrace = NonNullable<Initiator['stack']>;

/**
 * Adds the customer's extra headers to the requests for the origin of `url` that the origin itself makes, and to no
 * other: the navigation to `url`, the page's own documents, subresources and scripts. Requests to the origin that a
 * frame or script of another origin makes (an embedded widget calling back, a third-party script's fetch), and
 * everything sent to other origins, go as the browser would send them. Request interception pauses every request of
 * the page for a round trip to us, so it is switched on only when there are headers to add; a capture without them
 * keeps the plain path.
 */
export async function sendHeadersToOrigin(
  page: Page,
  url: string,
  headers: Record<string, string>,
): Promise<void> {
  if (Object.keys(headers).length === 0) return;
  const origin = new URL(url).origin;
  // Puppeteer reports request headers with lower-case names: the customer's replace the browser's, not join them.
  const extra = Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]),
  );
  const capture: HeadedCapture = { page, origin, trust: new WeakMap() };
  /** Each frame's navigations since its document last changed: their verdicts, by the address they ask for. */
  const pending = new WeakMap<Frame, Map<string, boolean>>();
  page.on('request', (request: HTTPRequest) => {
    if (request.isNavigationRequest() && request.frame() === page.mainFrame()) capture.navigation ??= request;
    const asked = httpOrigin(request.url()) === origin && askedByOrigin(request, capture);
    const frame = request.frame();
    if (request.isNavigationRequest() && frame) {
      const verdicts = pending.get(frame) ?? new Map<string, boolean>();
      verdicts.set(withoutFragment(request.url()), asked);
      pending.set(frame, verdicts);
    }
    void request.continue(asked ? { headers: { ...request.headers(), ...extra } } : undefined);
  });
  // A document's trust is its navigation's, once it is in: a navigation that never replaces the document (answered
  // `204`, a download, one cancelled by the next) leaves the document's own (red team: an origin's export link to a
  // third party answered 204 took the headers from the rest of the capture). A move within the document keeps it.
  page.on('framenavigated', (frame: Frame) => {
    const verdict = pending.get(frame)?.get(withoutFragment(frame.url()));
    if (verdict === undefined) return;
    capture.trust.set(frame, verdict);
    pending.delete(frame);
  });
  await page.setRequestInterception(true);
}

/**
 * For each frame, whether the origin asked for the navigation that brought its document. An origin document that a
 * stranger's navigation brought in (a third-party frame sent to the origin's login page with `?next=`) runs the
 * origin's code on the stranger's word: what it asks for is the stranger's too.
 */
type DocumentTrust = WeakMap<Frame, boolean>;

function withoutFragment(url: string): string {
  const hash = url.indexOf('#');
  return hash === -1 ? url : url.slice(0, hash);
}

/** A capture with headers, as its requests are judged. */
interface HeadedCapture {
  page: Page;
  origin: string;
  /** The navigation the capture starts (to `url`): the first of the main frame once interception is on. */
  navigation?: HTTPRequest;
  trust: DocumentTrust;
}

/**
 * Whether the origin itself asked for a request. Only a request whose redirects all stayed on the origin can be. The
 * capture's navigation, with those redirects, is the customer's own request; a later navigation of the top frame is
 * the page's, judged as any other request. A script's request counts only when every frame of its stack (async
 * parents included, where Chromium reports them) is code at an http(s) URL of the origin: a third party's frame
 * anywhere on it (calling the origin's functions, or evaluating text that names itself after an origin file with
 * `sourceURL`), a blob: or data: script, or code with no URL (eval, new Function, a string timer) makes it a
 * stranger's. A load the parser reports is the document's or style sheet's that named it; anything else, the
 * document's of its frame.
 */
function askedByOrigin(request: HTTPRequest, capture: HeadedCapture): boolean {
  const { origin, navigation, trust } = capture;
  const frame = request.frame();
  const chain = request.redirectChain();
  // A redirect keeps the initiator of the request it follows: a hop off the origin let a stranger pick where the chain
  // lands (a third party's image answering `302` to the origin's /logout), the capture's own navigation too (red team).
  if (chain.some((hop) => httpOrigin(hop.url()) !== origin)) return false;
  if (request.isNavigationRequest() && (chain[0] ?? request) === navigation) return true;
  // Chromium reports a frame's own loads (its refresh, its `Link` preloads, its lazy images) with the parent
  // document's parser as initiator: the frame's document, and each one above it, must be the origin's too (red team).
  if (!framesOnOrigin(request, origin, trust)) return false;
  const initiator = request.initiator();
  // A CORS preflight to the origin is the browser's, for a request another origin makes (red team).
  if (initiator?.type === 'preflight') return false;
  if (initiator?.stack)
    return stackOnOrigin(initiator.stack, origin) && !strangerBroughtOriginDocument(capture);
  // Scripts make these, and none of its code is on the stack: the browser's own function was handed over to be
  // called later (`setTimeout(fetch, 0, url)`, `.then(fetch)`), which Chromium reports as the document's parser at the
  // place of the script element that ran, whoever's it is: nothing says whose script asked (red team, round 21: a
  // third party's script got the customer's headers sent to the origin that way, and read the answer). A document's
  // own `<link rel=preload as=fetch>` goes without them too, at worst one request more.
  if (SCRIPT_MADE.has(request.resourceType())) return false;
  return httpOrigin(initiator?.url || frame?.url() || '') === origin;
}

/** Kinds of request a script asks for, whose initiator only a stack tells. */
const SCRIPT_MADE = new Set(['fetch', 'xhr', 'eventsource', 'websocket', 'ping']);

/**
 * Whether the request's frame and every frame above it hold documents of the origin that the origin's own navigations
 * brought in. A document with no server of its own (about:blank, about:srcdoc, a frame's initial empty document) is
 * its parent's, as the browser makes it. A navigation a script asks for, away from a stranger's document, is judged
 * without it: that document cannot run the origin's code, so the script's stack says whose it is (the origin's own
 * code sending a frame back from a partner's page).
 */
function framesOnOrigin(request: HTTPRequest, origin: string, trust: DocumentTrust): boolean {
  let frame = request.frame();
  if (
    frame &&
    request.isNavigationRequest() &&
    request.initiator()?.type === 'script' &&
    httpOrigin(frame.url()) !== origin
  )
    frame = frame.parentFrame();
  for (; frame; frame = frame.parentFrame()) {
    const url = frame.url();
    if (url === '' || url.startsWith('about:')) continue;
    if (httpOrigin(url) !== origin || trust.get(frame) !== true) return false;
  }
  return true;
}

/**
 * Whether some frame holds an origin document that a stranger's navigation brought in. Its code reaches every document
 * of the origin in the page (they are one origin), and a stack does not say which document's code ran (a login page
 * that breaks out of frames with `top.location = next`): while it is there, no origin stack proves the origin asked.
 */
function strangerBroughtOriginDocument({ page, origin, trust }: HeadedCapture): boolean {
  return page.frames().some((frame) => httpOrigin(frame.url()) === origin && trust.get(frame) === false);
}

function stackOnOrigin(stack: StackTrace, origin: string): boolean {
  let frames = 0;
  for (let at: StackTrace | undefined = stack; at; at = at.parent) {
    for (const call of at.callFrames) {
      frames++;
      if (httpOrigin(call.url) !== origin) return false;
    }
  }
  return frames > 0;
}

/** The origin of an http(s) URL; undefined for any other (a blob: URL's origin is its creator's, not a server's). */
function httpOrigin(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : undefined;
  } catch {
    return undefined;
  }
}
