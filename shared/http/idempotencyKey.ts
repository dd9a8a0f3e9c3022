import { type ValidationDetail, ValidationError } from '../errors';
import type { HttpRequest } from './types';

/** 1 to 255 visible ASCII characters (docs/api.md, "Idempotency"). */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export function isWellFormedIdempotencyKey(key: string): boolean {
  return IDEMPOTENCY_KEY.test(key);
}

/** A screenshot body that asks for an async capture: the one where Idempotency-Key applies. */
export function isAsyncBody(body: unknown): boolean {
  return body !== null && typeof body === 'object' && (body as { async?: unknown }).async === true;
}

/**
 * A route's lazy body reader that also refuses a malformed Idempotency-Key (when `applies` to the body read), so the
 * header is checked with the body's fields, in the route's order of checks, and not before the key is. The refusal
 * lists the body's own problems beside it (`fieldProblems`: a 400 lists every problem found; red team, round 24: the
 * client fixed the header, then learnt of the body).
 */
export function withIdempotencyKeyChecked(
  request: Pick<HttpRequest, 'headers'>,
  read: () => unknown,
  fieldProblems: (body: unknown) => ValidationDetail[],
  applies: (body: unknown) => boolean = () => true,
): () => unknown {
  return () => {
    const body = read();
    const key = request.headers['idempotency-key'];
    if (key !== undefined && applies(body) && !isWellFormedIdempotencyKey(key)) {
      throw new ValidationError(
        [
          {
            code: 'invalid_idempotency_key',
            path: ['Idempotency-Key'],
            message: 'Idempotency-Key must be 1 to 255 visible ASCII characters',
          },
          ...fieldProblems(body),
        ],
        'Invalid request body',
      );
    }
    return body;
  };
}
