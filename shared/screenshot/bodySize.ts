import { MAX_HTML_BYTES } from './outputFields';

/** The largest screenshot body accepted (docs/api.md, "Limits"). */
export const MAX_SCREENSHOT_BODY_BYTES = 96 * 1024;
/** The largest screenshot body that holds an `html` document: the document's own bound on top. */
export const MAX_HTML_BODY_BYTES = MAX_HTML_BYTES + MAX_SCREENSHOT_BODY_BYTES;

/**
 * Whether a read body holds an `html` document (a string), which raises its bound to MAX_HTML_BODY_BYTES: `"html":
 * null` or a number does not (red team, round 24: such a body over 96 KiB was answered 400, not 413).
 */
export function holdsHtml(body: unknown): boolean {
  return body !== null && typeof body === 'object' && typeof (body as { html?: unknown }).html === 'string';
}

/** The bound a screenshot body (or one request of a batch) is held to, by what it holds. */
export function screenshotBodyBound(body: unknown): number {
  return holdsHtml(body) ? MAX_HTML_BODY_BYTES : MAX_SCREENSHOT_BODY_BYTES;
}
