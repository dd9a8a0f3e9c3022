import { z } from 'zod';

/** An account holds at most this many keys, active and revoked together. */
export const MAX_KEYS_PER_ACCOUNT = 100;
export const MAX_KEY_NAME_LENGTH = 100;

/**
 * Characters a key name may not hold: control characters (C0, DEL, C1), which break lines and terminals, and the
 * bidirectional formatting characters (embeddings, overrides, isolates, marks, line and paragraph separators), which
 * make a name display as something else than it is in the dashboard, logs and listings.
 */
const UNSAFE_NAME_CHARACTERS = /[\p{Cc}\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;

/** Request bodies of the key-management routes; the handlers validate with these and nothing else. */
export const createKeyBody = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1, 'name must not be empty')
    .max(MAX_KEY_NAME_LENGTH, `name must be at most ${MAX_KEY_NAME_LENGTH} characters`)
    .refine((name) => !UNSAFE_NAME_CHARACTERS.test(name), {
      message: 'name must not contain control characters or bidirectional formatting characters',
    }),
});

export const updateKeyBody = z.strictObject({
  isActive: z.boolean(),
});

export type CreateKeyBody = z.infer<typeof createKeyBody>;
export type UpdateKeyBody = z.infer<typeof updateKeyBody>;
