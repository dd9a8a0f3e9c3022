import { z } from 'zod';

/** An account holds at most this many keys, active and revoked together. */
export const MAX_KEYS_PER_ACCOUNT = 100;
export const MAX_KEY_NAME_LENGTH = 100;

/**
 * Characters a key name may not hold: control characters (C0, DEL, C1), which break lines and terminals, the
 * bidirectional formatting characters (embeddings, overrides, isolates, marks, line and paragraph separators), and
 * the invisible ones no script needs (zero-width space, word joiner and invisible operators, byte-order mark, soft
 * hyphen, Mongolian vowel separator), which make a name display as something else than it is in the dashboard, logs
 * and listings. The zero-width joiner and non-joiner stay: scripts and emoji sequences need them.
 */
const UNSAFE_NAME_CHARACTERS =
  /[\p{Cc}\u00AD\u061C\u180E\u200B\u200E\u200F\u2028\u2029\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/u;
/**
 * What draws nothing of its own: combining marks, format characters (tags among them), spaces, and the letters and
 * symbols that are blank by design (Hangul fillers, the Braille blank).
 */
const VISIBLE_CHARACTER = /[^\p{M}\p{Cf}\p{Z}\s\u115F\u1160\u2800\u3164\uFFA0]/u;
/** More combining marks on one character than any script stacks: they draw over the rows around the name. */
const STACKED_MARKS = /\p{M}{5}/u;

/** Request bodies of the key-management routes; the handlers validate with these and nothing else. */
export const createKeyBody = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1, { error: 'name must not be empty', abort: true })
    .max(MAX_KEY_NAME_LENGTH, `name must be at most ${MAX_KEY_NAME_LENGTH} characters`)
    .refine((name) => !UNSAFE_NAME_CHARACTERS.test(name), {
      message: 'name must not contain control characters, bidirectional formatting or invisible characters',
    })
    // A lone surrogate is no character: strict JSON readers (jq) refused the whole key list that held it (red team).
    .refine((name) => !/\p{Cs}/u.test(name), {
      message: 'name must be well-formed Unicode (no lone surrogate)',
    })
    .refine((name) => VISIBLE_CHARACTER.test(name), {
      message: 'name must show at least one visible character',
    })
    .refine((name) => !STACKED_MARKS.test(name), {
      message: 'name must not stack more than 4 combining marks on one character',
    }),
});

export const updateKeyBody = z.strictObject({
  isActive: z.boolean(),
});

export type CreateKeyBody = z.infer<typeof createKeyBody>;
export type UpdateKeyBody = z.infer<typeof updateKeyBody>;
