import type { z } from 'zod';
import { type ValidationDetail, ValidationError } from './errors';

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

/** The problems `schema` finds in `value`, as `details[]`; none when it is valid. */
export function problemsOf(schema: z.ZodType, value: unknown): ValidationDetail[] {
  const result = schema.safeParse(value);
  return result.success ? [] : detailsFromZod(result.error);
}
