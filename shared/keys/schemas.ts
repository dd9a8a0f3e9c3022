import { z } from 'zod';

/** Request bodies of the key-management routes; the handlers validate with these and nothing else. */
export const createKeyBody = z.strictObject({
  name: z.string().trim().min(1, 'name must not be empty').max(100, 'name must be at most 100 characters'),
});

export const updateKeyBody = z.strictObject({
  isActive: z.boolean(),
});

export type CreateKeyBody = z.infer<typeof createKeyBody>;
export type UpdateKeyBody = z.infer<typeof updateKeyBody>;
