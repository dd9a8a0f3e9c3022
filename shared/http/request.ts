import type { z } from 'zod';
import {
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  type ValidationDetail,
  ValidationError,
} from '../errors';
import type { HttpRequest } from './types';

/** Bodies of the key-management routes are small JSON objects; anything larger is refused before parsing. */
export const MAX_BODY_BYTES = 16 * 1024;

/** The credential of `Authorization: Bearer <credential>`, or undefined when the header is absent or not Bearer. */
export function bearerCredential(request: Pick<HttpRequest, 'headers'>): string | undefined {
  const match = /^Bearer +(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1];
}

/** Maps zod issues to the 400 body's `details[]`: code, path, message. */
export function detailsFromZod(error: z.ZodError): ValidationDetail[] {
  return error.issues.map((issue) => ({
    code: issue.code,
    path: issue.path.filter((p): p is string | number => typeof p !== 'symbol'),
    message: issue.message,
  }));
}

/** Validates a parsed value with `schema`, or throws ValidationError with the zod issues as details. */
export function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  message = 'Invalid request body',
): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationError(detailsFromZod(result.error), message);
  return result.data;
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
    if (contentType !== undefined && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType)) {
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
