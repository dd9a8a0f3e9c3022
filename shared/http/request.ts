import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from '../errors';
import type { HttpRequest } from './types';

/** Bodies of the key-management routes are small JSON objects; anything larger is refused before parsing. */
export const MAX_BODY_BYTES = 16 * 1024;

/** The credential of `Authorization: Bearer <credential>`, or undefined when the header is absent or not Bearer. */
export function bearerCredential(request: Pick<HttpRequest, 'headers'>): string | undefined {
  const match = /^Bearer +(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1];
}

/**
 * The JSON body, checked for size, media type and syntax, as a thunk: use cases read it only when their order of
 * checks reaches validation, so a bad body never hides a 401 or a 429.
 */
export function jsonBody(request: Pick<HttpRequest, 'headers' | 'body'>, maxBytes = MAX_BODY_BYTES) {
  return (): unknown => {
    const text = request.body;
    if (Buffer.byteLength(text, 'utf8') > maxBytes) throw new PayloadTooLargeError(maxBytes);
    const contentType = request.headers['content-type'];
    // `application/json` or a `+json` type, then parameters only: `\b` let `json-seq`, `json.evil` and
    // `json, text/html` through (red team, round 20).
    if (contentType !== undefined && !/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(contentType)) {
      throw new UnsupportedMediaTypeError();
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new ValidationError(
        [
          {
            code: 'invalid_json',
            path: [],
            message: text.trim() === '' ? 'Request body is empty' : 'Request body is not valid JSON',
          },
        ],
        'Invalid request body',
      );
    }
  };
}
