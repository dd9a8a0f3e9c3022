import { z } from 'zod';

/** An account holds at most this many keys, active and revoked together. */
export const MAX_KEYS_PER_ACCOUNT = 100;
export const MAX_KEY_NAME_LENGTH = 100;

/** Request bodies of the key-management routes; the handlers validate with these and nothing else. */
export const createKeyBody = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1, 'name must not be empty')
    .max(MAX_KEY_NAME_LENGTH, `name must be at most ${MAX_KEY_NAME_LENGTH} characters`),
});

export const updateKeyBody = z.strictObject({
  isActive: z.boolean(),
});

export type CreateKeyBody = z.infer<typeof createKeyBody>;
export type UpdateKeyBody = z.infer<typeof updateKeyBody>;
