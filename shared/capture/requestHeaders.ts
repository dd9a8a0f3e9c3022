import type { HTTPRequest, Page } from 'puppeteer-core';

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
  page.on('request', (request: HTTPRequest) => {
    if (originOf(request.url()) !== origin || initiatorOrigin(page, request) !== origin) {
      void request.continue();
      return;
    }
    void request.continue({ headers: { ...request.headers(), ...extra } });
  });
  await page.setRequestInterception(true);
}

/**
 * The origin that asked for a request: the document whose markup or style named it (parser), the script whose code
 * made it (the innermost frame of its stack with a URL, through async parents), or else the document of its frame.
 * The top frame's navigation is the customer's own request. Undefined when nothing says.
 */
function initiatorOrigin(page: Page, request: HTTPRequest): string | undefined {
  const frame = request.frame();
  if (request.isNavigationRequest() && frame === page.mainFrame()) return originOf(request.url());
  const initiator = request.initiator();
  const named = initiator?.url || (initiator?.stack && scriptUrl(initiator.stack));
  return originOf(named || frame?.url() || '');
}

function scriptUrl(stack: StackTrace | undefined): string | undefined {
  for (let at = stack; at; at = at.parent) {
    const found = at.callFrames.find((call) => call.url !== '')?.url;
    if (found) return found;
  }
  return undefined;
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
