import { MAX_HTML_BYTES } from './outputFields';

/** The largest screenshot body accepted (docs/api.md, "Limits"). */
export const MAX_SCREENSHOT_BODY_BYTES = 96 * 1024;
/** The largest screenshot body that holds an `html` document: the document's own bound on top. */
export const MAX_HTML_BODY_BYTES = MAX_HTML_BYTES + MAX_SCREENSHOT_BODY_BYTES;

/** Whether a read body holds an `html` document, which raises its bound to MAX_HTML_BODY_BYTES. */
export function holdsHtml(body: unknown): boolean {
  return body !== null && typeof body === 'object' && 'html' in body;
}

/** The bound a screenshot body (or one request of a batch) is held to, by what it holds. */
export function screenshotBodyBound(body: unknown): number {
  return holdsHtml(body) ? MAX_HTML_BODY_BYTES : MAX_SCREENSHOT_BODY_BYTES;
}
