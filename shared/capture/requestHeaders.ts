import type { HTTPRequest, Page } from 'puppeteer-core';

/**
 * Adds the customer's extra headers to the requests for the origin of `url`, and to no other: subresources and
 * frames of other origins, and redirects that leave the origin, are sent as the browser would send them. Request
 * interception pauses every request of the page for a round trip to us, so it is switched on only when there are
 * headers to add; a capture without them keeps the plain path.
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
    if (originOf(request.url()) !== origin) {
      void request.continue();
      return;
    }
    void request.continue({ headers: { ...request.headers(), ...extra } });
  });
  await page.setRequestInterception(true);
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
