import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { z } from 'zod';
import {
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  type ValidationDetail,
  ValidationError,
} from '../errors';

/** Bodies we accept are small JSON objects; anything larger is refused before parsing. */
export const MAX_BODY_BYTES = 16 * 1024;

/** Header lookup that ignores case, as HTTP does (API Gateway passes headers as the client sent them). */
export function header(event: Pick<APIGatewayProxyEvent, 'headers'>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

/** The credential of `Authorization: Bearer <credential>`, or undefined when the header is absent or not Bearer. */
export function bearerCredential(event: Pick<APIGatewayProxyEvent, 'headers'>): string | undefined {
  const match = /^Bearer +(\S+)\s*$/i.exec(header(event, 'authorization') ?? '');
  return match?.[1];
}

/** Maps zod issues to the spec's `details[]`: code, path, message. */
export function detailsFromZod(error: z.ZodError): ValidationDetail[] {
  return error.issues.map((issue) => ({
    code: issue.code,
    path: issue.path.filter((p): p is string | number => typeof p !== 'symbol'),
    message: issue.message,
  }));
}

/** Parses the JSON body (size, media type, syntax) and validates it with `schema`. */
export function parseJsonBody<S extends z.ZodType>(
  event: Pick<APIGatewayProxyEvent, 'headers' | 'body' | 'isBase64Encoded'>,
  schema: S,
): z.infer<S> {
  const raw = event.body ?? '';
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES) throw new PayloadTooLargeError(MAX_BODY_BYTES);
  const contentType = header(event, 'content-type');
  if (contentType !== undefined && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType)) {
    throw new UnsupportedMediaTypeError();
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
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
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationError(detailsFromZod(result.error), 'Invalid request body');
  return result.data;
}
